package wire

import (
	"fmt"
	"regexp"
)

// DefaultSchema is the schema holding outboxtop's tables when none is named.
const DefaultSchema = "public"

var schemaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)

// ValidateSchema reports whether name can be used as outboxtop's schema. Names
// are restricted to plain identifiers so that log lines and the names built
// from them stay unambiguous.
func ValidateSchema(name string) error {
	if !schemaName.MatchString(name) {
		return fmt.Errorf("invalid schema name %q: use letters, digits and _ (at most 63, not starting with a digit)", name)
	}
	return nil
}
