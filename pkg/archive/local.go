package archive

import (
	"bufio"
	"os"
)

// IsLocalManifest sniffs the start of a local file for the manifest
// marker.
func IsLocalManifest(path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	head, _ := bufio.NewReaderSize(fh, 4096).Peek(4096)
	return LooksLikeManifest(head)
}

// IsLocalDir reports whether path is a directory (a downloaded run or
// several).
func IsLocalDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
