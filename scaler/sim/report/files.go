package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Write puts results.csv, results.json and the plots into dir (created if needed). base
// prefixes the file names (the trace's name), so one folder can hold several traces.
func (r *Report) Write(dir, base string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating output folder: %w", err)
	}
	var files []string
	for _, out := range []struct {
		name  string
		write func(string) error
	}{
		{base + "-results.csv", r.writeCSV},
		{base + "-results.json", r.writeJSON},
		{base + "-servers.png", r.plotServers},
		{base + "-spend.png", r.plotSpend},
		{base + "-waits.png", r.plotWaits},
		{base + "-pareto.png", r.plotPareto},
	} {
		path := filepath.Join(dir, out.name)
		if err := out.write(path); err != nil {
			return files, fmt.Errorf("writing %s: %w", out.name, err)
		}
		files = append(files, path)
	}
	return files, nil
}

func (r *Report) writeCSV(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(append([]string{"trace"}, columns()...))
	for _, row := range r.rows(false) {
		_ = w.Write(append([]string{r.Trace}, row...))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
