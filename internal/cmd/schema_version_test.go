package cmd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// Every command refuses a schema a newer outboxtop migrated, naming both versions.
func TestCommandsRefuseASchemaNewerThanTheBinary(t *testing.T) {
	t.Parallel()
	pool, dsn := testenv.Pool(t)
	known, err := migrations.Count()
	if err != nil {
		t.Fatal(err)
	}
	newer := known + 1
	if _, err := pool.Exec(context.Background(), `UPDATE outboxtop_schema_version SET version = $1`, newer); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("is at version %d, this outboxtop knows versions up to %d", newer, known)
	for _, args := range [][]string{
		{"migrate"},
		{"status"},
		{"events", "--state", "failed"},
		{"retry", "--all"},
		{"--headless", "--brokers", "127.0.0.1:1"},
	} {
		r := run(t, map[string]string{"DATABASE_URL": dsn}, args...)
		code := ExitFailure
		if args[0] == "status" {
			code = ExitUnknown // a monitoring check cannot tell: UNKNOWN
		}
		if r.code != code || !strings.Contains(r.err, want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", args, r.code, r.err, code, want)
		}
	}
}
