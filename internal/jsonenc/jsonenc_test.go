package jsonenc

import (
	"encoding/json"
	"math/rand"
	"testing"
	"time"
)

// Every byte, every rune class encoding/json treats specially, invalid
// UTF-8: String writes what json.Marshal writes.
func TestStringMatchesEncodingJSON(t *testing.T) {
	cases := []string{"", "plain", `q"uote\back`, "<a href='x'>&amp;</a>", "\u2028\u2029", "tab\tnl\ncr\r\b\f\x00\x1f\x7f",
		"日本語 ✓ 🎉", "bad \xff\xfe utf8", "\xe2\x80", "x\xed\xa0\x80y", "orders.created", "sha256:0123abcd~ff00aa11"}
	for b := 0; b < 256; b++ {
		cases = append(cases, string([]byte{'a', byte(b), 'z'}))
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "\"", "\\", "<", ">", "&", "\n", "\x01", "é", "\u2028", "\xff", "🎉", "\xe2", " "}
	for range 2000 {
		s := ""
		for range rng.Intn(12) {
			s += alphabet[rng.Intn(len(alphabet))]
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
}

func TestStringsAndTimeMatchEncodingJSON(t *testing.T) {
	for _, ss := range [][]string{nil, {}, {"a"}, {"orders", "audit<1>"}} {
		want, _ := json.Marshal(ss)
		if got := Strings(nil, ss); string(got) != string(want) {
			t.Errorf("Strings(%q) = %s, want %s", ss, got, want)
		}
	}
	times := []time.Time{time.Unix(0, 0).UTC(), time.Date(2026, 12, 2, 5, 1, 2, 345000000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", -5*3600-30*60)), time.Now(), {}}
	for _, tm := range times {
		want, _ := json.Marshal(tm)
		got, ok := Time(nil, tm)
		if !ok || string(got) != string(want) {
			t.Errorf("Time(%v) = %s (%v), want %s", tm, got, ok, want)
		}
	}
	if _, ok := Time(nil, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Error("year 10000: encoding/json refuses it, Time must say so")
	}
}
