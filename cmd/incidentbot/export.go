package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
)

// casesExportCmd is "incidentbot cases export".
type casesExportCmd struct {
	taxFlags
	storeFlags
	Out     string `name:"out" required:"" placeholder:"DIR" help:"Where to write the case files, one <id>.json per team case (created if missing)."`
	Private bool   `name:"private" help:"Also write the cases captured in private channels. Case files carry no channel: loaded with --cases, such a case is suggested everywhere."`
	Force   bool   `name:"force" help:"Overwrite a case file whose content would change (it may hold a reviewer's edits)."`
}

func (c *casesExportCmd) Run(ctx context.Context, e env) error {
	tax, err := c.taxonomy(e.stderr)
	if err != nil {
		return err
	}
	st, where, ok, err := openExisting(ctx, &c.storeFlags, e, nil)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no activity store at %s: point --db (or INCIDENTBOT_DB) at the file the bot writes, or set DATABASE_URL", where)
	}
	defer st.Close()
	rows, err := st.TeamCases(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", c.Out, err)
	}
	var written, same, private, refused int
	files := map[string][]byte{}
	for _, r := range rows {
		if r.Private && !c.Private {
			private++
			continue
		}
		if !strings.HasPrefix(r.ID, teamPrefix) || strings.ContainsAny(r.ID, `/\`) || r.ID == teamPrefix {
			fmt.Fprintf(e.stderr, "incidentbot: team case %q not written: its id cannot be a file name\n", r.ID)
			refused++
			continue
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, r.Case, "", "  "); err != nil {
			// Not JSON: written as stored, for cases validate to point at.
			buf.Reset()
			buf.Write(r.Case)
		}
		buf.WriteByte('\n')
		data := buf.Bytes()
		name := r.ID + ".json"
		files[name] = data
		file := filepath.Join(c.Out, name)
		old, err := os.ReadFile(file)
		switch {
		case err == nil && bytes.Equal(old, data):
			same++
			continue
		case err == nil && !c.Force:
			fmt.Fprintf(e.stderr, "incidentbot: %s changed, not overwritten (use --force)\n", file)
			refused++
			continue
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := writeFileAtomic(file, data); err != nil {
			return err
		}
		written++
	}
	set := cases.LoadBytes(c.Out, files, tax)
	for _, p := range set.Problems {
		if p.Severity == cases.Error {
			fmt.Fprintln(termWriter{e.stderr}, p.String())
		}
	}
	fmt.Fprintf(e.stdout, "%s written to %s, %s unchanged", plural(written, "team case"), c.Out, plural(same, "file"))
	if private > 0 {
		fmt.Fprintf(e.stdout, "; %s from private channels left out (--private writes them)", plural(private, "case"))
	}
	fmt.Fprintln(e.stdout)
	if n := set.Errors(); n > 0 {
		return fmt.Errorf("%s in the team cases: the files are written; run incidentbot cases validate %s", plural(n, "problem"), c.Out)
	}
	if refused > 0 {
		return fmt.Errorf("%s not written", plural(refused, "team case"))
	}
	return nil
}
