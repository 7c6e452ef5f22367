package bot

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the bot's Prometheus metrics.
type metrics struct {
	events      *prometheus.CounterVec
	posted      prometheus.Counter
	updated     prometheus.Counter
	suppressed  *prometheus.CounterVec
	matchTime   prometheus.Histogram
	ackTime     prometheus.Histogram
	apiErrors   *prometheus.CounterVec
	reconnects  prometheus.Counter
	dropped     prometheus.Counter
	panics      prometheus.Counter
	inboxErrors prometheus.Counter
	orphans     prometheus.Counter
	queueLength prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, queueLen func() float64) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentbot_events_received_total", Help: "Socket Mode events received, by type.",
		}, []string{"type"}),
		posted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentbot_suggestions_posted_total", Help: "Replies with similar cases posted in threads.",
		}),
		updated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentbot_suggestions_updated_total", Help: "Replies updated because the best matches changed.",
		}),
		suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentbot_duplicates_suppressed_total", Help: "Work not done because it repeated earlier work, by reason.",
		}, []string{"reason"}),
		matchTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "incidentbot_match_duration_seconds", Help: "Time to match a text against the case library.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		ackTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "incidentbot_ack_duration_seconds", Help: "Time from receiving an envelope to queueing its ack.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 3},
		}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "incidentbot_slack_api_errors_total", Help: "Slack Web API calls that failed, by method.",
		}, []string{"method"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentbot_reconnects_total", Help: "Socket Mode reconnections.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentbot_queue_dropped_total", Help: "Queued work dropped because the queue was full.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentbot_handler_panics_total", Help: "Panics recovered while handling an event.",
		}),
		inboxErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentbot_inbox_errors_total", Help: "Failures to record an event before its ack or to mark it handled.",
		}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "incidentbot_orphans_taken_total", Help: "Events taken over from a replica that stopped before handling them.",
		}),
		queueLength: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "incidentbot_queue_length", Help: "Work waiting in the queue.",
		}, queueLen),
	}
	reg.MustRegister(m.events, m.posted, m.updated, m.suppressed, m.matchTime, m.ackTime, m.apiErrors, m.reconnects, m.dropped, m.panics, m.inboxErrors, m.orphans, m.queueLength)
	return m
}
