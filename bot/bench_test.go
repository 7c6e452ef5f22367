package bot_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/matcher"
)

var stormFor = flag.Duration("storm", 5*time.Minute, "how long BenchmarkAlertStorm sends alerts")

var (
	builtinOnce sync.Once
	builtinM    *matcher.Matcher
)

func builtinMatcher(b *testing.B) *matcher.Matcher {
	builtinOnce.Do(func() {
		set, err := cases.Builtin(cases.DefaultTaxonomy())
		if err != nil {
			panic(err)
		}
		lib, _ := cases.NewLibrary(set)
		builtinM, err = matcher.New(lib, matcher.Options{})
		if err != nil {
			panic(err)
		}
	})
	return builtinM
}

// benchAlerts are distinct alert texts (each a new alert, not a repeat).
var benchAlerts = []string{
	"[FIRING:1] KubePodCrashLooping (%s) pod api-%d is in CrashLoopBackOff, last state OOMKilled",
	"[FIRING:1] HighErrorRate (%s) 502 Bad Gateway from the load balancer at 14%% of requests, shard %d",
	"[FIRING:1] CoreDNSErrorsHigh (%s) SERVFAIL and NXDOMAIN for internal names, node %d",
	"[FIRING:1] PostgresqlTooManyConnections (%s) remaining connection slots are reserved, replica %d",
	"[FIRING:1] SSLCertExpiringSoon (%s) x509: certificate has expired for api-%d.internal",
	"[FIRING:1] KafkaConsumerLag (%s) consumer group orders-%d lag above 2M and growing",
}

func alertEvent(channel string, ts int, i int) map[string]any {
	text := fmt.Sprintf(benchAlerts[i%len(benchAlerts)], channel, i)
	return map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B0ALERTS", "text": "",
		"channel": channel, "channel_type": "channel", "ts": fmt.Sprintf("%d.%06d", 1732000000+ts, i%1000000),
		"attachments": []any{map[string]any{"title": text, "text": text}}}
}

func startBench(b *testing.B, channels int, opts ...slackfake.Option) (*slackfake.Server, []string, func()) {
	fake := slackfake.New(opts...)
	var ids []string
	for i := range channels {
		id := fmt.Sprintf("C%06d", i)
		fake.AddChannel(id, fmt.Sprintf("inc-%d", i), false)
		ids = append(ids, id)
	}
	bt, err := bot.New(builtinMatcher(b), bot.Options{AppToken: "xapp-1", BotToken: "xoxb-1", APIURL: fake.APIURL(),
		ChannelPatterns: []string{"inc-*"}, QueueSize: 10000})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bt.Run(ctx) }()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		b.Fatal(err)
	}
	return fake, ids, func() {
		cancel()
		<-done
		fake.Close()
	}
}

func pct(d []time.Duration, p int) time.Duration {
	slices.Sort(d)
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)]
}

// BenchmarkReply measures, through the fake Slack on loopback with the
// built-in library, envelope sent to ack (target p99 <= 5 ms) and envelope
// sent to reply posted (targets p50 <= 20 ms, p99 <= 60 ms). Each alert
// goes to its own channel so per-channel pacing does not count.
func BenchmarkReply(b *testing.B) {
	const channels = 2000
	fake, chans, stop := startBench(b, channels)
	defer stop()
	ctx := context.Background()
	var acks, replies []time.Duration
	i := 0
	for b.Loop() {
		ch := chans[i%channels]
		ev := alertEvent(ch, i, i)
		sent := time.Now()
		id := fake.SendEvent(ev)
		if _, err := fake.WaitAck(ctx, id); err != nil {
			b.Fatal(err)
		}
		acks = append(acks, fake.AckTime(id))
		c, err := fake.WaitCall(ctx, func(c slackfake.Call) bool {
			return c.Method == "chat.postMessage" && c.Channel == ch && c.ThreadTS == ev["ts"]
		})
		if err != nil {
			b.Fatal(err)
		}
		replies = append(replies, c.Time.Sub(sent))
		i++
	}
	b.ReportMetric(ms(pct(acks, 99)), "ack-p99-ms")
	b.ReportMetric(ms(pct(replies, 50)), "reply-p50-ms")
	b.ReportMetric(ms(pct(replies, 99)), "reply-p99-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkAlertStorm sends 1,000 alerts a minute across 20 channels for
// -storm (default 5 minutes) and reports the slowest ack (target: every ack
// within 100 ms) and how the heap grew between the first minute and the end
// (target: flat).
func BenchmarkAlertStorm(b *testing.B) {
	for b.Loop() {
		fake, chans, stop := startBench(b, 20, slackfake.WithLean())
		ctx := context.Background()
		tick := time.NewTicker(time.Minute / 1000)
		end := time.Now().Add(*stormFor)
		var ids []string
		var heapAfterWarmup uint64
		warm := time.Now().Add(*stormFor / 5)
		for i := 0; time.Now().Before(end); i++ {
			<-tick.C
			ids = append(ids, fake.SendEvent(alertEvent(chans[i%len(chans)], i, i)))
			if heapAfterWarmup == 0 && time.Now().After(warm) {
				heapAfterWarmup = heapInUse()
			}
		}
		tick.Stop()
		var worst time.Duration
		late := 0
		for _, id := range ids {
			if _, err := fake.WaitAck(ctx, id); err != nil {
				b.Fatal(err)
			}
			d := fake.AckTime(id)
			worst = max(worst, d)
			if d > 100*time.Millisecond {
				late++
			}
		}
		heapEnd := heapInUse()
		stop()
		b.ReportMetric(float64(len(ids)), "alerts")
		b.ReportMetric(ms(worst), "ack-max-ms")
		b.ReportMetric(float64(late), "acks-over-100ms")
		b.ReportMetric(float64(int64(heapEnd)-int64(heapAfterWarmup))/(1<<20), "heap-growth-MB")
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkChatterFlood floods a channel the bot does not answer in with
// 40-KB messages (each the start of a thread), one per iteration, through
// the fake Slack, and reports how much the heap grew per message and in
// all (target: flat, bounded by what the bot keeps of such threads). With
// one worker the queue is one FIFO lane, so the reply to an alert sent
// after the flood means every flooded message was handled.
func BenchmarkChatterFlood(b *testing.B) {
	fake := slackfake.New(slackfake.WithLean())
	defer fake.Close()
	fake.AddChannel("C0GENERAL", "general", false)
	fake.AddChannel("C0INC", "inc-flood", false)
	bt, err := bot.New(builtinMatcher(b), bot.Options{AppToken: "xapp-1", BotToken: "xoxb-1", APIURL: fake.APIURL(),
		ChannelPatterns: []string{"inc-*"}, Workers: 1, QueueSize: 10000})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bt.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		b.Fatal(err)
	}
	filler := strings.Repeat("build step 17 finished, artifacts uploaded; 빌드 단계 완료 ", 40<<10/64)
	chatter := func(i int) map[string]any {
		return map[string]any{"type": "message", "user": "U0DEV", "channel": "C0GENERAL", "channel_type": "channel",
			"ts": fmt.Sprintf("1733000000.%06d", i), "text": fmt.Sprintf("deploy %d log: %s", i, filler)}
	}
	alerts := 0
	drain := func() {
		ev := alertEvent("C0INC", 1<<20+alerts, alerts)
		alerts++
		fake.SendEvent(ev)
		if _, err := fake.WaitCall(ctx, func(c slackfake.Call) bool {
			return c.Method == "chat.postMessage" && c.Channel == "C0INC" && c.ThreadTS == ev["ts"]
		}); err != nil {
			b.Fatal(err)
		}
	}
	fake.SendEvent(chatter(-1)) // warm up: the channel's lookup, the first reply
	drain()
	before := heapLive()
	i := 0
	for b.Loop() {
		id := fake.SendEvent(chatter(i))
		if _, err := fake.WaitAck(ctx, id); err != nil {
			b.Fatal(err)
		}
		i++
	}
	drain()
	growth := float64(int64(heapLive()) - int64(before))
	b.ReportMetric(growth/float64(i), "heap-B/msg")
	b.ReportMetric(growth/(1<<20), "heap-growth-MB")
}

// heapLive is the bytes of live objects after a full collection.
func heapLive() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
