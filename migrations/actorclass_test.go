package migrations_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/ident"
)

// TestActorCheckIsIdentsBlank: the functions' actor check refuses an actor
// made only of the code points internal/ident's Key takes out
// (ident.BlankRanges), so an actor the Go side accepts the database accepts,
// and the other way round. A Go whose Unicode tables move fails it: the class
// in the file is then written again from the one this test prints.
func TestActorCheckIsIdentsBlank(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("functions/outboxtop_actor_check.sql")
	if err != nil {
		t.Fatal(err)
	}
	if class := postgresClass(ident.BlankRanges()); !strings.Contains(string(body), "'"+class+"'") {
		t.Errorf("outboxtop_actor_check is not ident.Blank; its class is\n%s", class)
	}
}

// postgresClass is a PostgreSQL regular expression's bracket expression
// matching ranges (NUL left out: text cannot hold it).
func postgresClass(ranges [][2]rune) string {
	esc := func(r rune) string {
		if r > 0xffff {
			return fmt.Sprintf(`\U%08x`, r)
		}
		return fmt.Sprintf(`\u%04x`, r)
	}
	var b strings.Builder
	b.WriteByte('[')
	for _, rg := range ranges {
		lo := max(rg[0], 1)
		b.WriteString(esc(lo))
		if rg[1] > lo {
			b.WriteString("-" + esc(rg[1]))
		}
	}
	b.WriteByte(']')
	return b.String()
}
