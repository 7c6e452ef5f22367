package bot

import (
	"context"
	"sync"
	"testing"
)

func TestQueueDropsOldestDuplicateWhenFull(t *testing.T) {
	dropped := 0
	q := newQueue(1, 3, func(job, bool) { dropped++ })
	var mu sync.Mutex
	var ran []string
	mk := func(name, dup string) job {
		return job{shard: "s", dup: dup, run: func(context.Context) {
			mu.Lock()
			ran = append(ran, name)
			mu.Unlock()
		}}
	}
	// Nothing runs yet: the worker starts after the pushes.
	q.push(mk("a1", "alert-a"))
	q.push(mk("human", ""))
	q.push(mk("a2", "alert-a"))
	q.push(mk("b", "alert-b")) // full: the oldest duplicate (a1) goes
	q.push(mk("c", "alert-c")) // full, no duplicate left: the oldest (human) goes
	if dropped != 2 {
		t.Fatalf("dropped %d jobs, want 2", dropped)
	}
	q.start(context.Background(), func(ctx context.Context, j job) { j.run(ctx) })
	q.close()
	if err := q.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"a2", "b", "c"}
	if len(ran) != len(want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
	for i := range want {
		if ran[i] != want[i] {
			t.Fatalf("ran %v, want %v", ran, want)
		}
	}
}
