package kafka

import (
	"net"
	"sync"
	"time"
)

// Fetch bounds of dlqctl's consumer, for the bare loop of BenchmarkRedrive
// (it must fetch the same way to be compared side by side).
const (
	FetchMaxBytes          = fetchMaxBytes
	FetchMaxPartitionBytes = fetchMaxPartitionBytes
	FetchMaxWait           = fetchMaxWait
)

// DelayOpenConsumer makes OpenConsumer wait, once its group client exists,
// until the group has assigned it partitions (or for at most d): what a
// loaded machine does when the goroutine opening the consumer is not
// scheduled while the join completes. It returns a restore function.
func DelayOpenConsumer(d time.Duration) (restore func()) {
	afterConsumerClient = func(c *Consumer) {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			c.mu.Lock()
			n := len(c.parts)
			c.mu.Unlock()
			if n > 0 {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return func() { afterConsumerClient = nil }
}

// WrapConns makes every plaintext connection of the clients created from
// now on go through wrap (BenchmarkRedrive's round-trip time). It returns
// a restore function.
func WrapConns(wrap func(net.Conn) net.Conn) (restore func()) {
	wrapConn = wrap
	return func() { wrapConn = nil }
}

// StaleGenerations makes the next n commits send the generation before
// the member's own (a commit that raced the group's move to a new
// generation); the coordinator answers ILLEGAL_GENERATION to each. It
// returns a restore function.
func StaleGenerations(n int) (restore func()) {
	var mu sync.Mutex
	staleGeneration = func(gen int32) int32 {
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return gen
		}
		n--
		return gen - 1
	}
	return func() { staleGeneration = nil }
}

// HandOverWait sets how long a revoke waits for held records. It
// returns a restore function.
func HandOverWait(d time.Duration) (restore func()) {
	old := handOverWait
	handOverWait = d
	return func() { handOverWait = old }
}

// Holding is how many records a consuming source's reads hold for the run
// (handed out, or read ahead, and not yet acked, released or settled).
func Holding(src any) int {
	s, ok := src.(*consumeSource)
	if !ok {
		return -1
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	n := 0
	for _, ps := range s.c.parts {
		n += ps.holding
	}
	return n
}
