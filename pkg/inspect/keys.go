package inspect

import "slices"

// Decoders walk attributes, headers and JSON objects in sorted key order,
// never in Go's random map order: the first type, message or class found
// fills failure.type, .reason and .error_class, so a random order would
// classify and group the same message differently from run to run (found
// by FuzzDecode).

// sortedKeys returns the keys of m in byte order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortedAttrs returns the record's attribute names in byte order, computed
// once per message for every decoder that walks them.
func (d *Decoding) sortedAttrs() []string {
	if d.attrNames == nil && len(d.Rec.Attributes) > 0 {
		names := d.attrBuf[:0]
		for k := range d.Rec.Attributes {
			names = append(names, k)
		}
		slices.Sort(names)
		d.attrNames = names
	}
	return d.attrNames
}

// failureKeys appends to dst the keys of m that name failure context
// (generic failure keys), in byte order. Most keys of a body are not, so
// only those few are sorted; dst is usually a small array on the caller's
// stack.
func failureKeys(dst []string, m map[string]any, buf []byte) []string {
	for k := range m {
		if genericKind(buf, k) != "" {
			dst = append(dst, k)
		}
	}
	slices.Sort(dst)
	return dst
}
