package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// baseline is the outboxtop binary built from another git revision (--baseline
// REV), measured beside this tree's in the throughput part: same cluster, same
// kfake, runs interleaved.
type baseline struct {
	Rev     string `json:"rev"`    // short revision, the name its runs carry
	Commit  string `json:"commit"` // full hash
	Subject string `json:"subject"`
	path    string
}

// git runs git in the current directory (the repository's root, where the bench
// builds) and returns its trimmed output.
func git(args ...string) (string, error) {
	var out, errb bytes.Buffer
	c := exec.Command("git", args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), firstLine(msg))
	}
	return strings.TrimSpace(out.String()), nil
}

// currentRev names the tree the bench builds: HEAD's short revision, with
// "+dirty" when the working tree differs from it (the binary is built from the
// working tree, uncommitted changes included). "" outside a git checkout.
func currentRev() string {
	head, err := git("rev-parse", "--short", "HEAD")
	if err != nil {
		return ""
	}
	if st, err := git("status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		head += "+dirty"
	}
	return head
}

// buildBaseline builds outboxtop at rev into out/outboxtop-<shortrev>, from a
// temporary worktree removed afterwards.
func buildBaseline(rev, out string) (*baseline, error) {
	commit, err := git("rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: no such revision in this repository", rev)
	}
	short, err := git("rev-parse", "--short", commit)
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %w", rev, err)
	}
	subject, _ := git("log", "-1", "--format=%s", commit)
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	b := &baseline{Rev: short, Commit: commit, Subject: subject, path: filepath.Join(absOut, "outboxtop-"+short)}
	tmp, err := os.MkdirTemp("", "outboxtop-baseline-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, short)
	logf("building baseline %s (%s) in a worktree at %s", short, truncate(subject, 60), tree)
	if _, err := git("worktree", "add", "--detach", tree, commit); err != nil {
		return nil, fmt.Errorf("--baseline %s: %w", rev, err)
	}
	defer func() {
		if _, err := git("worktree", "remove", "--force", tree); err != nil {
			logf("removing the baseline's worktree: %v (git worktree prune clears it)", err)
		} else {
			logf("removed the worktree at %s", tree)
		}
	}()
	var outb bytes.Buffer
	build := exec.Command("go", "build", "-o", b.path, ".")
	build.Dir = tree
	build.Stdout, build.Stderr = &outb, &outb
	if err := build.Run(); err != nil {
		os.Stderr.Write(outb.Bytes())
		why := err.Error()
		for _, l := range strings.Split(outb.String(), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				why = l
				break
			}
		}
		return nil, fmt.Errorf("--baseline %s: %s does not build: %s", rev, short, why)
	}
	// The relays run with --headless --drain: a revision from before --drain
	// would fail only after the templates and references, minutes in.
	help, _ := exec.Command(b.path, "--help").CombinedOutput()
	if !bytes.Contains(help, []byte("--drain")) {
		return nil, fmt.Errorf("--baseline %s: %s has no --drain flag (the bench's relays run --headless --drain)", rev, short)
	}
	logf("built %s", b.path)
	return b, nil
}

// migrate gives the database at dsn the baseline's schema with its own migrate
// command.
func (b *baseline) migrate(ctx context.Context, dsn string) error {
	out, err := exec.CommandContext(ctx, b.path, "migrate", "--dsn", dsn).CombinedOutput()
	if err != nil {
		return fmt.Errorf("baseline %s: outboxtop migrate: %v: %s", b.Rev, err, firstLine(lastLine(string(out))))
	}
	logf("migrated with outboxtop-%s migrate: %s", b.Rev, lastLine(string(out)))
	return nil
}

// forRev is how a log line names the binary rev's side: nothing for this tree.
func forRev(rev string) string {
	if rev == "" {
		return ""
	}
	return " [baseline " + rev + "]"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
