package cmd

import "github.com/dlqctl/dlqctl/pkg/report"

// writeStructured prints a command's data for -o json (whole, as one
// document) and -o ndjson (one line per item) and reports whether it did;
// for -o table it does nothing and returns false, and the caller renders
// its table.
func writeStructured[T any](f *Factory, whole any, items []T) (bool, error) {
	format, _ := f.Format()
	return report.WriteStructured(f.IO, format, whole, items)
}
