package security

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/cmd"
)

// farTimes are finite times PostgreSQL stores and the tables' check of
// finiteness lets in: its latest and its earliest day.
var farTimes = []string{"294276-12-31 00:00:00+00", "4713-11-24 00:00:00+00 BC"}

// farColumns set one time column of an event to $2, with what makes the
// event's state follow from it.
var farColumns = map[string]string{
	"available_at": `available_at = $2`,
	"lease_until":  `lease_until = $2, lease_token = gen_random_uuid(), lease_holder = 'relay-1:42', attempts = 1`,
	"created_at":   `created_at = $2`,
	"failed_at":    `failed_at = $2, last_error = 'boom', attempts = 1`,
	"published_at": `published_at = $2, attempts = 1, kafka_topic = 'outbox.order', kafka_partition = 0, kafka_offset = 7`,
}

// overflowed are what a time past a Duration's range, or past the layouts'
// four-digit years, printed as.
var overflowed = []string{"2562047h", "-2562047", "106751d", "292277026", "-4712-", "0001-01-01", "year outside of range"}

// TestFarTimesInEveryOutput: each of the five time columns of an event at
// PostgreSQL's latest and earliest day. status, events, trace and audit, as
// text and as --json, exit as they would without them, write JSON that
// parses, print those times as PostgreSQL does or in words ("in 292271
// years", "years ago"), and never an overflowed Duration or year.
func TestFarTimesInEveryOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, "console")
	var ids []string
	for col, set := range farColumns {
		for k, at := range farTimes {
			id := b.insert(t, "order", fmt.Sprintf("%s-%d", col, k), 1)[0]
			if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET `+set+` WHERE event_id = $1`, id, at); err != nil {
				t.Fatalf("%s = %s: %v", col, at, err)
			}
			ids = append(ids, id)
		}
	}
	// An action on them, its row at either end of time too.
	if _, err := b.admin.Exec(b.ctx, `INSERT INTO outbox_audit (actor, action, filter, event_ids, rows, at) VALUES
		('alice', 'retry', '{}', $1::uuid[], 1, $2), ('bob', 'park', '{}', $1::uuid[], 1, $3)`, ids[:2], farTimes[0], farTimes[1]); err != nil {
		t.Fatal(err)
	}

	runs := [][]string{{"status", "--warn-failed", "-1", "--warn-blocked", "-1"}, {"audit"}}
	for _, st := range []string{"pending", "ready", "scheduled", "leased", "failed", "published"} {
		runs = append(runs, []string{"events", "--state", st})
	}
	for _, id := range ids {
		runs = append(runs, []string{"trace", id})
	}
	for _, id := range ids {
		runs = append(runs, []string{"events", "--aggregate", "order/" + aggregateOf(t, b, id)})
	}
	for _, args := range runs {
		for _, asJSON := range []bool{false, true} {
			if asJSON {
				args = append(args, "--json")
			}
			code, out := b.cliAs(t, args...)
			what := strings.Join(args, " ")
			if code != cmd.ExitOK {
				t.Errorf("%s: exit %d\n%s", what, code, out)
			}
			for _, bad := range overflowed {
				if strings.Contains(out, bad) {
					t.Errorf("%s prints %q:\n%s", what, bad, out)
				}
			}
			if asJSON && !json.Valid([]byte(out)) {
				t.Errorf("%s: not JSON:\n%s", what, out)
			}
		}
	}
	for k, id := range ids {
		pg := farTimes[k%2]
		words := regexp.MustCompile(regexp.QuoteMeta(pg) + `  \((in 2922\d\d years|67\d\d years ago)\)`)
		_, text := b.cliAs(t, "trace", id)
		_, js := b.cliAs(t, "trace", id, "--json")
		if !words.MatchString(text) || !strings.Contains(js, `"`+pg+`"`) {
			t.Errorf("trace %s does not show %s as PostgreSQL writes it, and when in words:\n%s\n%s", id, pg, text, js)
		}
	}
}

func aggregateOf(t *testing.T, b *bundle, id string) string {
	t.Helper()
	var agg string
	if err := b.admin.QueryRow(b.ctx, `SELECT aggregate_id FROM outbox_event WHERE event_id = $1`, id).Scan(&agg); err != nil {
		t.Fatal(err)
	}
	return agg
}
