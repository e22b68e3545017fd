package archive

import (
	"encoding/json"
	"errors"

	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func bytesReader(b []byte) io.ReadSeeker { return bytes.NewReader(b) }

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }

func unmarshalRecord(raw []byte, rec *record.Record) error {
	if err := json.Unmarshal(raw, rec); err != nil {
		return err
	}
	if rec.MessageID == "" {
		return errors.New("no message_id")
	}
	return nil
}
