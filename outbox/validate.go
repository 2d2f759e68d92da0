package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/outboxtop/outboxtop/internal/ident"
	"github.com/outboxtop/outboxtop/wire"
)

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

// checkTopic applies Kafka's rules for topic names (the relay's own), so a
// misspelt topic is refused here rather than dead-lettered by the relay later.
func checkTopic(t string) error {
	if err := wire.ValidateTopic(t); err != nil {
		return invalid("topic: %v", err)
	}
	return nil
}

// checkHeader refuses a header the relay reserves (wire.CheckHeader) or one it
// would fail as reading like such a header (ident.Lookalike: "Event_ID",
// "ｅｖｅｎｔ_ｉｄ", "event_id\u034f"), and text PostgreSQL cannot store.
func checkHeader(k, v string) error {
	if err := wire.CheckHeader(k); err != nil {
		return invalid("%v", err)
	}
	if h := ident.Lookalike(k, wire.ReservedHeaders()); h != "" {
		return invalid("header %q is too like the reserved %q: the relay sets that on every record", k, h)
	}
	if err := checkText(k); err != nil {
		return invalid("header key %q: %v", k, err)
	}
	if err := checkText(v); err != nil {
		return invalid("header %q: %v", k, err)
	}
	return nil
}
