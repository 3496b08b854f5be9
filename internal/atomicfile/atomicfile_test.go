package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteReplaces: the new content replaces the old, readable by others (Prometheus's user),
// and no temporary file is left beside it.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rota.json")
	for _, content := range []string{"[]\n", "[{\"targets\":[\"a:1\"],\"labels\":{}}]\n"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got := read(t, path); got != content {
			t.Errorf("file holds %q, want %q", got, content)
		}
	}
	checkMode(t, path, 0o644)
	checkAlone(t, dir)
}

// TestMissingFolder: the error names the file and its missing folder, not renameio's
// temporary file.
func TestMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	path := filepath.Join(dir, "rota-rules.yml")
	want := "writing " + path + ": no folder " + dir
	if err := Write(path, []byte("groups: []\n")); err == nil || err.Error() != want {
		t.Errorf("Write: %v, want %q", err, want)
	}
	if _, err := Pending(path); err == nil || err.Error() != want {
		t.Errorf("Pending: %v, want %q", err, want)
	}
}

// TestFolderInTheWay: a folder where the file would go is named as such, not as renameio's
// failed rename of its temporary file, and nothing is left beside it.
func TestFolderInTheWay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "targets")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	want := "writing " + path + ": it is a folder; name a file"
	if err := Write(path, []byte("[]\n")); err == nil || err.Error() != want {
		t.Errorf("Write: %v, want %q", err, want)
	}
	if _, err := Pending(path); err == nil || err.Error() != want {
		t.Errorf("Pending: %v, want %q", err, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("left beside the folder: %v, %v", entries, err)
	}
}

// TestPending: a pending file replaces its path only when told, private to its owner; cleaned
// up, it leaves the old file as it was and nothing beside it.
func TestPending(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Pending(path)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(f.Name()) != dir {
		t.Errorf("pending file %s, want it in %s", f.Name(), dir)
	}
	if _, err := f.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "old" {
		t.Errorf("before the replace: %q, want the old content", got)
	}
	if err := f.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "old" {
		t.Errorf("after a cleanup: %q, want the old content", got)
	}
	checkAlone(t, dir)

	f, err = Pending(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := f.CloseAtomicallyReplace(); err != nil {
		t.Fatal(err)
	}
	if err := f.Cleanup(); err != nil { // a no-op once replaced
		t.Fatal(err)
	}
	if got := read(t, path); got != "new" {
		t.Errorf("after the replace: %q, want the new content", got)
	}
	checkMode(t, path, 0o600)
	checkAlone(t, dir)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("mode %v, want %v", fi.Mode().Perm(), want)
	}
}

// checkAlone fails unless dir holds exactly one entry: no temporary file was left.
func checkAlone(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the file", len(entries))
	}
}
