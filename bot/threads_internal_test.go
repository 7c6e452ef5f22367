package bot

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func heapLive() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// bigMessage is a message of about 40 KB, distinct for each i, made the
// way a decoded event's text is: a string of its own.
func bigMessage(i int) string {
	return fmt.Sprintf("deploy log %d: ", i) + strings.Repeat("building step ok; 빌드 단계 완료; ", 40<<10/45)
}

// What the bot keeps of threads does not grow with the size of their
// messages: 3,000 40-KB messages in a channel it does not answer in once
// kept 249 MB; now the first maxRootText bytes of the last
// maxChatterThreads of them are kept.
func TestThreadsKeepBoundedTextOfLargeMessages(t *testing.T) {
	const n = 3000
	ts := newThreads(20000)
	before := heapLive()
	for i := range n {
		ts.addChatter("C0GENERAL", fmt.Sprintf("1732000000.%06d", i), bigMessage(i), false)
	}
	chatter := int64(heapLive()) - int64(before)
	runtime.KeepAlive(ts)
	t.Logf("%d 40-KB messages in a channel not answered: heap +%.1f MiB", n, float64(chatter)/(1<<20))
	if limit := int64(maxChatterThreads * (maxRootText + 1024)); chatter > limit {
		t.Errorf("heap grew %d bytes, want at most %d (%d threads of %d bytes)", chatter, limit, maxChatterThreads, maxRootText)
	}
	// The newest thread is still answered from its first message.
	th, ok := ts.get("C0GENERAL", fmt.Sprintf("1732000000.%06d", n-1))
	if !ok || !strings.HasPrefix(th.root, fmt.Sprintf("deploy log %d: ", n-1)) || len(th.root) > maxRootText {
		t.Errorf("last thread: ok %v, root %d bytes starting %.20q", ok, len(th.root), th.root)
	}

	// In channels it answers in, each thread keeps at most maxRootText
	// plus maxThreadText bytes, however long its messages.
	ts = newThreads(20000)
	before = heapLive()
	for i := range n {
		key := fmt.Sprintf("1732000000.%06d", i)
		ts.add("C0INC", key, true, bigMessage(i), false)
		ts.add("C0INC", key, false, bigMessage(i+n), false)
	}
	answered := int64(heapLive()) - int64(before)
	runtime.KeepAlive(ts)
	t.Logf("%d incident threads of two 40-KB messages: heap +%.1f MiB", n, float64(answered)/(1<<20))
	if limit := int64(n * (maxRootText + maxThreadText + 1024)); answered > limit {
		t.Errorf("heap grew %d bytes, want at most %d", answered, limit)
	}
}
