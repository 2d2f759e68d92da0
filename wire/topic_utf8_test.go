package wire_test

import (
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/wire"
)

// An illegal character outside ASCII is quoted whole, not as its first byte.
func TestValidateTopicQuotesTheIllegalCharacterWhole(t *testing.T) {
	err := wire.ValidateTopic("ordre.bekræftet.ø")
	if err == nil || !strings.Contains(err.Error(), `illegal character 'æ'`) || strings.Contains(err.Error(), "Ã") {
		t.Fatalf("got %v", err)
	}
}
