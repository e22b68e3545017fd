package kafka_test

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// delayedConn is a connection over a link with a round-trip time and no
// bandwidth limit: every byte written reaches the server half a round trip
// after Write, every byte the server sent is readable half a round trip
// after it arrived. Bytes keep their order and nothing waits for the bytes
// before it (a request written behind another is not held up by its
// answer), as on a long link. Reads and writes go through goroutines of
// their own, which Close ends; a read deadline is kept by Read, and a
// write never waits (it is queued).
type delayedConn struct {
	net.Conn
	half time.Duration

	wmu    sync.Mutex
	wq     chan chunk
	closed chan struct{}
	once   sync.Once

	rq   chan chunk
	next *chunk // taken from rq, not readable yet
	rbuf []byte
	rerr error

	dmu      sync.Mutex
	deadline time.Time     // read deadline
	moved    chan struct{} // the read deadline changed
}

type chunk struct {
	at   time.Time
	data []byte
	err  error
}

// withRTT wraps c in a link with round-trip time rtt.
func withRTT(rtt time.Duration) func(net.Conn) net.Conn {
	return func(c net.Conn) net.Conn {
		d := &delayedConn{Conn: c, half: rtt / 2, wq: make(chan chunk, 1024), rq: make(chan chunk, 1024), closed: make(chan struct{}), moved: make(chan struct{}, 1)}
		go d.writeLoop()
		go d.readLoop()
		return d
	}
}

func (d *delayedConn) writeLoop() {
	for {
		select {
		case <-d.closed:
			return
		case c := <-d.wq:
			time.Sleep(time.Until(c.at))
			if _, err := d.Conn.Write(c.data); err != nil {
				_ = d.Conn.Close()
				return
			}
		}
	}
}

func (d *delayedConn) readLoop() {
	defer close(d.rq)
	buf := make([]byte, 64<<10)
	for {
		n, err := d.Conn.Read(buf)
		if n > 0 {
			d.rq <- chunk{at: time.Now().Add(d.half), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			d.rq <- chunk{at: time.Now().Add(d.half), err: err}
			return
		}
	}
}

func (d *delayedConn) Write(b []byte) (int, error) {
	select {
	case <-d.closed:
		return 0, net.ErrClosed
	default:
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.wq <- chunk{at: time.Now().Add(d.half), data: append([]byte(nil), b...)}
	return len(b), nil
}

func (d *delayedConn) Read(b []byte) (int, error) {
	for len(d.rbuf) == 0 {
		if d.rerr != nil {
			return 0, d.rerr
		}
		if d.next == nil {
			c, err := d.wait(d.rq)
			if err != nil {
				return 0, err
			}
			d.next = c
		}
		// The chunk is readable half a round trip after it arrived.
		if err := d.sleepUntil(d.next.at); err != nil {
			return 0, err
		}
		d.rbuf, d.rerr, d.next = d.next.data, d.next.err, nil
	}
	n := copy(b, d.rbuf)
	d.rbuf = d.rbuf[n:]
	return n, nil
}

// wait takes the next chunk the server sent, or fails at the read
// deadline (a deadline moved meanwhile counts from then on).
func (d *delayedConn) wait(rq <-chan chunk) (*chunk, error) {
	for {
		timer, expired := d.deadlineTimer()
		if expired {
			return nil, os.ErrDeadlineExceeded
		}
		select {
		case c, ok := <-rq:
			stop(timer)
			if !ok {
				return nil, net.ErrClosed
			}
			return &c, nil
		case <-timerC(timer):
			return nil, os.ErrDeadlineExceeded
		case <-d.moved:
			stop(timer)
		}
	}
}

// sleepUntil waits until at, or fails at the read deadline.
func (d *delayedConn) sleepUntil(at time.Time) error {
	for time.Now().Before(at) {
		timer, expired := d.deadlineTimer()
		if expired {
			return os.ErrDeadlineExceeded
		}
		wake := time.NewTimer(time.Until(at))
		select {
		case <-wake.C:
		case <-timerC(timer):
			wake.Stop()
			return os.ErrDeadlineExceeded
		case <-d.moved:
			wake.Stop()
		}
		stop(timer)
	}
	return nil
}

// deadlineTimer is a timer firing at the read deadline (nil: none), or
// expired when it has passed.
func (d *delayedConn) deadlineTimer() (*time.Timer, bool) {
	d.dmu.Lock()
	dl := d.deadline
	d.dmu.Unlock()
	if dl.IsZero() {
		return nil, false
	}
	left := time.Until(dl)
	if left <= 0 {
		return nil, true
	}
	return time.NewTimer(left), false
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

func stop(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

func (d *delayedConn) Close() error {
	d.once.Do(func() { close(d.closed) })
	return d.Conn.Close()
}

// SetDeadline sets the read deadline: a write never waits (it is queued).
func (d *delayedConn) SetDeadline(t time.Time) error { return d.SetReadDeadline(t) }

func (d *delayedConn) SetReadDeadline(t time.Time) error {
	d.dmu.Lock()
	d.deadline = t
	d.dmu.Unlock()
	select {
	case d.moved <- struct{}{}:
	default:
	}
	return nil
}

func (d *delayedConn) SetWriteDeadline(time.Time) error { return nil }

// TestDelayedConnDelaysRoundTripsAndKeepsDeadlines: the benchmark's link
// answers an echo no sooner than its round trip, keeps the bytes in order,
// and a read deadline ends a read that waits (franz-go ends a client's
// reads that way when it closes).
func TestDelayedConnDelaysRoundTripsAndKeepsDeadlines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const rtt = 40 * time.Millisecond
	c := withRTT(rtt)(raw)
	defer c.Close()
	start := time.Now()
	for _, s := range []string{"one ", "two ", "three"} {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, len("one two three"))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < rtt {
		t.Errorf("echo answered after %v, want at least the round trip %v", took, rtt)
	}
	if string(got) != "one two three" {
		t.Errorf("echo %q, want the bytes in order", got)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a read with nothing to come returned %v, want the deadline's error", err)
	}
}
