package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// correctFile writes a payload file for correct.
func correctFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// correct shows the diff first (all of it with --dry-run, which changes
// nothing), then replaces the failed event by a copy in its place: the
// original archived, one audit row. Whatever cannot be done is one line, exit
// 2, nothing changed: no payload, a payload that is not JSON, no reason, a
// payload on stdin without --yes, an event that is not failed, an unchanged
// payload, read-only mode.
func TestCorrectShowsTheDiffThenReplacesTheEvent(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	good := correctFile(t, `{"customer": {"id": 42}}`)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"correct", "--id", cliFailed, "--reason", "x", "--yes"}, "--payload-file"},
		{[]string{"correct", "--id", cliFailed, "--payload-file", correctFile(t, `{"customer": `), "--reason", "x", "--yes"}, "not valid JSON at byte"},
		{[]string{"correct", "--id", cliFailed, "--payload-file", good, "--yes"}, "needs --reason"},
		{[]string{"correct", "--id", cliFailed, "--payload-file", "-", "--reason", "x"}, "pass --yes"},
		{[]string{"correct", "--id", cliReady, "--payload-file", good, "--reason", "x", "--yes"}, "is ready"},
		{[]string{"correct", "--id", cliFailed, "--payload-file", correctFile(t, `{}`), "--reason", "x", "--yes"}, "unchanged"},
		{[]string{"correct", "--id", cliFailed, "--payload-file", good, "--reason", "x", "--read-only"}, "read-only"},
		{[]string{"correct", "--id", cliFailed, "--payload-file", correctFile(t, `{"s": "\u0000"}`), "--reason", "x", "--yes"}, "holds no \\u0000"},
		{[]string{"correct", "--id", cliFailed, "--payload-file", filepath.Join(t.TempDir(), "missing.json"), "--reason", "x", "--yes"}, "no such file"},
	} {
		r := run(t, env, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.says) || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
			t.Errorf("%v: %+v; want exit %d, one line saying %q", c.args, r, ExitUsage, c.says)
		}
	}
	if n, _ := auditCount(t, pool); n != 0 || !failedAt(t, pool, cliFailed) {
		t.Fatal("a refused correction changed something")
	}
	r := run(t, env, "correct", "--id", cliFailed[:8], "--payload-file", good, "--reason", "typo", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.out, "correct "+cliFailed+": 1 change\n  customer: added {\"id\": 42}\n") {
		t.Fatalf("dry run: %+v", r)
	}
	if n, _ := auditCount(t, pool); n != 0 {
		t.Fatal("the dry run changed something")
	}
	r = run(t, env, "correct", "--id", cliFailed, "--payload-file", good, "--reason", "typo", "--yes", "--actor", "alice")
	if r.code != ExitOK || !strings.Contains(r.out, "corrected "+cliFailed+" as ") {
		t.Fatalf("correct: %+v", r)
	}
	var seqs, archived int
	if err := pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM outbox_event e, outbox_event_archive a WHERE a.event_id = $1 AND e.correction_of = a.event_id AND e.seq = a.seq),
		(SELECT count(*) FROM outbox_event_archive WHERE event_id = $1 AND failed_at IS NOT NULL)`, cliFailed).Scan(&seqs, &archived); err != nil {
		t.Fatal(err)
	}
	if n, actor := auditCount(t, pool); n != 1 || actor != "alice" || seqs != 1 || archived != 1 {
		t.Errorf("after correct: %d audit rows by %q, %d copies in the original's seq, %d archived originals; want 1 by alice, 1, 1", n, actor, seqs, archived)
	}
	// The copy's trace names what it corrects.
	var copyID string
	if err := pool.QueryRow(context.Background(), `SELECT event_id::text FROM outbox_event WHERE correction_of = $1`, cliFailed).Scan(&copyID); err != nil {
		t.Fatal(err)
	}
	if r := run(t, env, "trace", copyID); r.code != ExitOK || !strings.Contains(r.out, "correction_of") || !strings.Contains(r.out, cliFailed) {
		t.Errorf("trace of the corrected copy: %+v", r)
	}
}

// The payload may come on stdin.
func TestCorrectReadsThePayloadFromStdin(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"correct", "--id", cliFailed, "--payload-file", "-", "--reason", "typo", "--yes"}, IO{
		In: strings.NewReader(`{"fixed": true}`), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }})
	var copies int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_event WHERE correction_of = $1 AND payload = '{"fixed": true}'`,
		cliFailed).Scan(&copies); err != nil || code != ExitOK || copies != 1 {
		t.Fatalf("correct from stdin: exit %d, %d copies (%v): %s %s", code, copies, err, out.String(), errb.String())
	}
}

// events --json carries each listed event's attempt history, by event id.
func TestEventsJSONCarriesTheAttemptHistory(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_attempt (event_id, attempt, lease_holder, class, outcome, error, kafka_code)
		VALUES ($1, 5, 'relay-a:1', 'permanent', 'fail', 'MESSAGE_TOO_LARGE', 10)`, cliFailed); err != nil {
		t.Fatal(err)
	}
	r := run(t, env, "events", "--state", "failed", "--json")
	var page struct {
		Events []struct {
			EventID string `json:"event_id"`
		} `json:"events"`
		AttemptHistory map[string][]struct {
			Attempt   int    `json:"attempt"`
			Holder    string `json:"lease_holder"`
			Class     string `json:"class"`
			KafkaCode *int   `json:"kafka_code"`
		} `json:"attempt_history"`
	}
	if err := json.Unmarshal([]byte(r.out), &page); err != nil || r.code != ExitOK {
		t.Fatalf("events --json: %+v (%v)", r, err)
	}
	h := page.AttemptHistory[cliFailed]
	if len(page.Events) != 1 || len(h) != 1 || h[0].Attempt != 5 || h[0].Holder != "relay-a:1" || h[0].Class != "permanent" ||
		h[0].KafkaCode == nil || *h[0].KafkaCode != 10 {
		t.Errorf("events --json history: %+v", page)
	}
}
