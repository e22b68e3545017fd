package kafka

import "sort"

// offsetSet is a set of offsets kept as sorted, disjoint, non-adjacent
// half-open ranges. A consumer hands out a partition's records in
// increasing offsets and most are settled in the same order, so adding
// extends the last range and removing shrinks the first: O(1) a record
// and no allocation, where a map paid a hash insert and delete for each.
type offsetSet struct{ s []span }

// add puts o in the set.
func (x *offsetSet) add(o int64) {
	n := len(x.s)
	if n > 0 && x.s[n-1].to == o { // the next record of the partition
		x.s[n-1].to++
		return
	}
	if n == 0 || o > x.s[n-1].to {
		x.s = append(x.s, span{o, o + 1})
		return
	}
	i := sort.Search(n, func(i int) bool { return x.s[i].to >= o })
	switch {
	case x.s[i].from <= o && o < x.s[i].to: // already in
	case x.s[i].to == o: // extends range i upward, maybe into i+1
		x.s[i].to++
		if i+1 < n && x.s[i+1].from == x.s[i].to {
			x.s[i].to = x.s[i+1].to
			x.s = append(x.s[:i+1], x.s[i+2:]...)
		}
	case x.s[i].from == o+1: // extends range i downward (range i-1 ends before o)
		x.s[i].from--
	default:
		x.s = append(x.s, span{})
		copy(x.s[i+1:], x.s[i:])
		x.s[i] = span{o, o + 1}
	}
}

// remove takes o out of the set (nothing when it is not in).
func (x *offsetSet) remove(o int64) {
	n := len(x.s)
	i := 0
	if n == 0 || x.s[0].to <= o { // the oldest range first: the common case
		i = sort.Search(n, func(i int) bool { return x.s[i].to > o })
	}
	if i == n || x.s[i].from > o {
		return
	}
	switch {
	case x.s[i].from == o:
		x.s[i].from++
		if x.s[i].from == x.s[i].to {
			x.s = append(x.s[:i], x.s[i+1:]...)
		}
	case x.s[i].to == o+1:
		x.s[i].to--
	default: // splits range i
		x.s = append(x.s, span{})
		copy(x.s[i+2:], x.s[i+1:])
		x.s[i+1] = span{o + 1, x.s[i].to}
		x.s[i].to = o
	}
}

// has reports whether o is in the set.
func (x *offsetSet) has(o int64) bool {
	if x == nil {
		return false
	}
	i := sort.Search(len(x.s), func(i int) bool { return x.s[i].to > o })
	return i < len(x.s) && x.s[i].from <= o
}
