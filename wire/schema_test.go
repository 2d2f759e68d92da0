package wire_test

import (
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/wire"
)

func TestValidateSchema(t *testing.T) {
	for _, ok := range []string{wire.DefaultSchema, "billing", "_x", "a$b", "A1"} {
		if err := wire.ValidateSchema(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1a", "a-b", "a.b", `a"b`, "a b", "ø", strings.Repeat("a", 64)} {
		if wire.ValidateSchema(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
