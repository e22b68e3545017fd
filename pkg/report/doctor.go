package report

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/doctor"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// WriteDoctor prints doctor's report in format: a table and the fixes on
// a terminal, one tab-separated line per check when piped.
func WriteDoctor(s *output.IOStreams, format output.Format, rep *doctor.Report) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(s.Out, rep)
	case output.NDJSON:
		w := output.NewNDJSON(s.Out)
		for _, c := range rep.Checks {
			if err := w.Write(c); err != nil {
				return err
			}
		}
		return nil
	}
	if !s.OutTTY {
		for _, c := range rep.Checks {
			line := []string{c.Name, string(c.Status), dash(c.Resource), c.Detail, dash(c.Fix)}
			for i := range line {
				line[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(line[i])
			}
			if _, err := fmt.Fprintln(s.Out, strings.Join(line, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	t := output.NewTable(s, "CHECK", "STATUS", "DETAIL")
	var fixes []string
	for _, c := range rep.Checks {
		name := c.Name
		if c.Resource != "" && c.Resource != "*" {
			name += " " + shortResource(c.Resource)
		}
		t.Row(name, string(c.Status), c.Detail)
		if c.Fix != "" && c.Status != doctor.OK {
			fixes = append(fixes, fmt.Sprintf("%s %s: %s", s.Paint(output.StatusStyle(string(c.Status)), string(c.Status)), name, c.Fix))
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(fixes) > 0 {
		fmt.Fprintln(s.Out, "\nTo fix (fail, warn) or verify (not-checked):")
		for _, x := range fixes {
			fmt.Fprintln(s.Out, "  "+x)
		}
	}
	return nil
}

// dash stands for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortResource is the last part of an ARN (a queue name, a bucket, a log
// group) or of a broker reference (the queue or topic; "vhost V" for a
// RabbitMQ vhost, amqp://HOST/V/; the brokers of a Kafka cluster).
func shortResource(arn string) string {
	if i := strings.Index(arn, "://"); i >= 0 {
		if strings.HasSuffix(arn, "/") && strings.Count(arn[i+3:], "/") == 2 {
			v := strings.TrimSuffix(arn, "/")
			v = v[strings.LastIndex(v, "/")+1:]
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
			return "vhost " + v
		}
		last := arn[strings.LastIndex(arn, "/")+1:]
		if u, err := url.PathUnescape(last); err == nil {
			return u
		}
		return last
	}
	if strings.HasPrefix(arn, "arn:aws:s3:::") {
		return strings.TrimPrefix(arn, "arn:aws:s3:::")
	}
	if i := strings.Index(arn, ":log-group:"); i >= 0 {
		return strings.TrimSuffix(arn[i+len(":log-group:"):], ":*")
	}
	return arn[strings.LastIndex(arn, ":")+1:]
}
