package wire

import (
	"fmt"
	"regexp"
)

// DefaultSchema is the schema holding outboxtop's tables when none is named.
const DefaultSchema = "public"

var schemaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)

// ValidateSchema reports whether name can be used as outboxtop's schema. Names
// are restricted to plain identifiers so that the NOTIFY channel and log lines
// stay unambiguous.
func ValidateSchema(name string) error {
	if !schemaName.MatchString(name) {
		return fmt.Errorf("invalid schema name %q: use letters, digits and _ (at most 63, not starting with a digit)", name)
	}
	return nil
}

// Channel is the LISTEN/NOTIFY channel on which inserts into schema's
// outbox_event are announced: migrations' trigger notifies it, the relay
// listens on it.
func Channel(schema string) string { return "outboxtop_" + schema }
