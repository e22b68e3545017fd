package archive

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"123": 123, "64KiB": 64 << 10, "64MiB": 64 << 20, "1GiB": 1 << 30, "5gib": 5 << 30,
		"10MB": 10_000_000, "1GB": 1_000_000_000, "2kb": 2000, "16k": 16 << 10, "1m": 1 << 20,
		"1g": 1 << 30, "512b": 512, " 1.5 MiB ": 3 << 19,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "0", "ten", "1TiB", "1.2.3k"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}
