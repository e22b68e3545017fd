package ui

import (
	"slices"
	"strings"
	"time"
)

// Memory bounds of a read: the UI keeps counts for every message and a
// bounded number of ids and records, so it reads a 100k-message DLQ in
// flat memory.
const (
	// maxIDs is how many message ids a group keeps (to select the group by
	// ids when its key has no exact filter).
	maxIDs = 5000
	// maxKeptPerGroup records are kept per group for the Messages screen.
	maxKeptPerGroup = 50
	// maxKept bounds the records kept over all groups.
	maxKept = 2000
)

// group is one group of messages under one key.
type group struct {
	Value       string
	Count       int
	First, Last time.Time // oldest and newest sent_at
	IDs         []string
	Items       []*Item
}

// aggregate counts every message read into groups under each of the
// GroupKeys at once, so that switching keys needs no second read.
type aggregate struct {
	total  int
	groups [6]map[string]*group
	kept   int
}

func newAggregate() *aggregate {
	a := &aggregate{}
	for i := range a.groups {
		a.groups[i] = map[string]*group{}
	}
	return a
}

func (a *aggregate) add(it *Item) {
	a.total++
	keep := false
	id := ""
	for k := range GroupKeys {
		v := it.Keys[k]
		g, ok := a.groups[k][v]
		if !ok {
			// The values may share the bytes of a whole body: a group keeps
			// a copy.
			g = &group{Value: strings.Clone(v)}
			a.groups[k][g.Value] = g
		}
		g.Count++
		if t := it.Rec.System.SentAt; !t.IsZero() {
			if g.First.IsZero() || t.Before(g.First) {
				g.First = t
			}
			if t.After(g.Last) {
				g.Last = t
			}
		}
		if len(g.IDs) < maxIDs && it.Rec.MessageID != "" {
			if id == "" {
				// A copy: the id must not keep what it was read with.
				id = strings.Clone(it.Rec.MessageID)
			}
			g.IDs = append(g.IDs, id)
		}
		if len(g.Items) < maxKeptPerGroup && a.kept < maxKept {
			g.Items = append(g.Items, it)
			keep = true
		}
	}
	if keep {
		a.kept++
	}
}

// sorted returns the groups under key k, largest first (ties by value).
func (a *aggregate) sorted(k int) []*group {
	out := make([]*group, 0, len(a.groups[k]))
	for _, g := range a.groups[k] {
		out = append(out, g)
	}
	slices.SortFunc(out, func(x, y *group) int {
		if x.Count != y.Count {
			return y.Count - x.Count
		}
		return strings.Compare(x.Value, y.Value)
	})
	return out
}
