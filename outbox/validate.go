package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// ReservedHeaders are the Kafka headers the relay sets on every record. An
// event's own Headers may not use them: a second event_id header would leave a
// consumer guessing which one to deduplicate on.
var ReservedHeaders = []string{"event_id", "event_type", "aggregate_type", "aggregate_id", "created_at"}

// checkText refuses what a PostgreSQL text column refuses, so the caller's
// transaction is never aborted by an insert that could not succeed.
func checkText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errors.New("contains a NUL byte")
	}
	return nil
}

func encodePayload(p any) (json.RawMessage, error) {
	var b []byte
	switch v := p.(type) {
	case nil:
		return nil, invalid("nil payload (use json.RawMessage(\"null\") for JSON null)")
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		m, err := json.Marshal(v)
		if err != nil {
			return nil, invalid("payload: %v", err)
		}
		return m, checkJSONB(m)
	}
	if !json.Valid(b) {
		return nil, invalid("payload is not valid JSON")
	}
	if !utf8.Valid(b) {
		return nil, invalid("payload is not valid UTF-8")
	}
	return b, checkJSONB(b)
}

// checkJSONB refuses the one thing valid JSON may hold that jsonb does not: a
// \u0000 escape in a string.
func checkJSONB(b []byte) error {
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return nil
	}
	// The bytes may be an escaped backslash followed by "u0000"; look properly.
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return invalid("payload: %v", err)
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return invalid("payload contains \\u0000, which PostgreSQL's jsonb cannot store")
		}
	}
}

// checkTopic applies Kafka's rules for topic names, so a misspelt topic is
// refused here rather than dead-lettered by the relay later.
func checkTopic(t string) error {
	if len(t) > 249 {
		return invalid("topic %.40q…: longer than 249 characters", t)
	}
	if t == "." || t == ".." {
		return invalid("topic %q is not allowed", t)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return invalid("topic %q: only letters, digits, '.', '_' and '-' are allowed", t)
		}
	}
	return nil
}

func checkHeader(k, v string) error {
	if k == "" {
		return invalid("header with an empty key")
	}
	for _, r := range ReservedHeaders {
		if k == r {
			return invalid("header %q is set by the relay", k)
		}
	}
	if err := checkText(k); err != nil {
		return invalid("header key %q: %v", k, err)
	}
	if err := checkText(v); err != nil {
		return invalid("header %q: %v", k, err)
	}
	return nil
}
