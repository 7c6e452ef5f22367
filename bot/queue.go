package bot

import (
	"context"
	"hash/fnv"
	"sync"
)

// job is work the event loop hands to the workers after acking.
type job struct {
	shard string // jobs with the same shard key run in order, one at a time (a thread)
	dup   string // jobs with the same dup key repeat each other (the same alert); empty if none
	inbox string // the event's inbox key, marked done if the job is dropped; empty if none
	run   func(ctx context.Context)
}

// queue is a bounded set of per-shard FIFO lanes served by one worker each.
// Jobs of one thread land in one lane, so a thread's messages are handled
// in order and never race to post two replies. Push never blocks: when a
// lane is full it drops the oldest job that repeats another queued job (or,
// with none, the lane's oldest job) and hands it to drop.
type queue struct {
	lanes []*lane
	// drop is called for each job dropped: full is true for a job dropped
	// from a full lane, false for one pushed after close.
	drop func(j job, full bool)
	wg   sync.WaitGroup
}

type lane struct {
	mu     sync.Mutex
	jobs   []job
	max    int
	wake   chan struct{}
	closed bool
}

func newQueue(workers, size int, drop func(j job, full bool)) *queue {
	q := &queue{drop: drop}
	per := max(size/workers, 1)
	for range workers {
		q.lanes = append(q.lanes, &lane{max: per, wake: make(chan struct{}, 1)})
	}
	return q
}

func (q *queue) push(j job) {
	h := fnv.New32a()
	h.Write([]byte(j.shard))
	l := q.lanes[int(h.Sum32()%uint32(len(q.lanes)))]
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		q.drop(j, false)
		return
	}
	var gone job
	full := len(l.jobs) >= l.max
	if full {
		l.jobs, gone = dropOne(l.jobs, j.dup)
	}
	l.jobs = append(l.jobs, j)
	l.mu.Unlock()
	if full {
		q.drop(gone, true)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// dropOne removes the oldest job that another queued job (or the incoming
// one, whose dup key is incoming) repeats; failing that, the oldest job. It
// returns the jobs left and the one removed.
func dropOne(jobs []job, incoming string) ([]job, job) {
	count := map[string]int{}
	if incoming != "" {
		count[incoming]++
	}
	for _, j := range jobs {
		if j.dup != "" {
			count[j.dup]++
		}
	}
	for i, j := range jobs {
		if j.dup != "" && count[j.dup] > 1 {
			return append(jobs[:i], jobs[i+1:]...), j
		}
	}
	return jobs[1:], jobs[0]
}

// len returns the number of queued jobs.
func (q *queue) len() int {
	n := 0
	for _, l := range q.lanes {
		l.mu.Lock()
		n += len(l.jobs)
		l.mu.Unlock()
	}
	return n
}

// start runs one worker per lane; each recovers from panics in jobs via wrap.
func (q *queue) start(ctx context.Context, wrap func(context.Context, job)) {
	for _, l := range q.lanes {
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			for {
				l.mu.Lock()
				if len(l.jobs) == 0 {
					closed := l.closed
					l.mu.Unlock()
					if closed {
						return
					}
					select {
					case <-l.wake:
					case <-ctx.Done():
						return
					}
					continue
				}
				j := l.jobs[0]
				l.jobs = l.jobs[1:]
				l.mu.Unlock()
				wrap(ctx, j)
			}
		}()
	}
}

// close stops taking jobs; workers finish what is queued and return.
func (q *queue) close() {
	for _, l := range q.lanes {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// wait waits for the workers to return, or for ctx to end.
func (q *queue) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		q.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
