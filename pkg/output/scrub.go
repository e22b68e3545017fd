package output

import (
	"io"
	"strings"
)

// Scrubbed is s with every secret in secrets replaced by "***" in all it
// writes to Out and ErrOut (s itself when there is none to hide).
func Scrubbed(s *IOStreams, secrets []string) *IOStreams {
	if len(secrets) == 0 {
		return s
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, sec := range secrets {
		pairs = append(pairs, sec, "***")
	}
	r := strings.NewReplacer(pairs...)
	c := *s
	c.Out, c.ErrOut = &scrubWriter{w: s.Out, r: r}, &scrubWriter{w: s.ErrOut, r: r}
	return &c
}

// scrubWriter replaces secrets in every write. A write reports len(p) on
// success, whatever the replacement's length.
type scrubWriter struct {
	w io.Writer
	r *strings.Replacer
}

func (s *scrubWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.r.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap is the stream under the scrubber.
func (s *scrubWriter) Unwrap() io.Writer { return s.w }

// Terminal is the terminal under out, for a full-screen program that
// needs the terminal itself (its size, raw mode): a scrubber would hide
// it. Such a program masks secrets in what it draws itself.
func Terminal(out io.Writer) io.Writer {
	for {
		u, ok := out.(interface{ Unwrap() io.Writer })
		if !ok {
			return out
		}
		out = u.Unwrap()
	}
}
