package report

import "testing"

// TestSummaryRowNoteIsTheDecidingRulesNote: a --summary row carries the
// note of the rule that decided most of its messages, never the note of
// another rule of the same class that decided none (the transient row of
// timeouts used to say "the broker's capacity decision (TTL expiry …)",
// the note of the first transient rule in the list).
func TestSummaryRowNoteIsTheDecidingRulesNote(t *testing.T) {
	notes := map[string]string{
		"broker-capacity":   "the broker's capacity decision",
		"transient-failure": "the dependency failed",
		"default":           "no rule recognised the failure",
		"quiet":             "",
	}
	cases := []struct {
		counts map[string]int
		want   string
	}{
		{map[string]int{"transient-failure": 1854}, "the dependency failed"},
		{map[string]int{"transient-failure": 10, "broker-capacity": 30}, "the broker's capacity decision"},
		{map[string]int{"default": 5, "quiet": 50}, "no rule recognised the failure"},
		{map[string]int{"broker-capacity": 3, "transient-failure": 3}, "the broker's capacity decision"}, // tie: name order
		{map[string]int{"quiet": 3}, ""},
	}
	for _, c := range cases {
		if got := RowNote(c.counts, notes); got != c.want {
			t.Errorf("RowNote(%v) = %q, want %q", c.counts, got, c.want)
		}
	}
}
