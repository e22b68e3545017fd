package amqp

import "testing"

// basic.ack(multiple) removes every outstanding delivery up to its tag:
// Ack may use it only up to the oldest outstanding delivery it was not
// asked to remove (another worker's, or one given back and kept).
func TestAckablePrefix(t *testing.T) {
	set := func(tags ...uint64) map[uint64]bool {
		m := map[uint64]bool{}
		for _, t := range tags {
			m[t] = true
		}
		return m
	}
	cases := []struct {
		name           string
		held, released map[uint64]bool
		ack            []uint64
		want           uint64
	}{
		{"the oldest batch, whole", set(1, 2, 3, 4, 5, 6), nil, []uint64{1, 2, 3}, 3},
		{"a newer batch, an older one outstanding", set(1, 2, 3, 4, 5, 6), nil, []uint64{4, 5, 6}, 0},
		{"part of it behind another's delivery", set(1, 2, 3, 4, 5, 6), nil, []uint64{1, 2, 4, 5}, 2},
		{"a delivery given back blocks", set(2, 3, 4), set(1), []uint64{2, 3, 4}, 0},
		{"given back after the batch", set(1, 2, 3), set(9), []uint64{1, 2, 3}, 3},
		{"out of order, gaps acked before", set(10, 12, 15, 20), nil, []uint64{15, 10, 12}, 15},
		{"one message: a plain ack", set(1, 2), nil, []uint64{1}, 0},
		{"only one before the bound", set(1, 2, 3), nil, []uint64{1, 3}, 0},
	}
	for _, c := range cases {
		s := &Source{held: c.held, released: c.released}
		if s.released == nil {
			s.released = map[uint64]bool{}
		}
		if got := s.ackablePrefix(c.ack); got != c.want {
			t.Errorf("%s: ackablePrefix(%v) = %d, want %d", c.name, c.ack, got, c.want)
		}
	}
}
