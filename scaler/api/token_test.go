package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/scaler/api"
)

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		mode          os.FileMode
		wantErr       bool
	}{
		{name: "plain", content: "s3cret"},
		{name: "trailing newline", content: "s3cret\n"},
		{name: "surrounding space", content: "  s3cret \r\n"},
		{name: "empty", content: "", wantErr: true},
		{name: "only whitespace", content: " \n", wantErr: true},
		{name: "group may read", content: "s3cret", mode: 0o640},
		{name: "every user may read", content: "s3cret", mode: 0o644, wantErr: true},
		{name: "every user may write", content: "s3cret", mode: 0o602, wantErr: true},
		{name: "not a token", content: strings.Repeat("x", 5000), wantErr: true},
		// No HTTP header carries these: rota took such a token (its API then refused every
		// client) and rotactl failed with net/http's words, naming no file.
		{name: "two lines", content: "s3cret\nline2\n", wantErr: true},
		{name: "a control character", content: "s3\x01cret", wantErr: true},
		{name: "DEL", content: "s3cret\x7f", wantErr: true},
		{name: "inner space and tab", content: "s3 c\tret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.mode != 0 {
				if err := os.Chmod(p, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			tok, err := api.ReadTokenFile(p)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				if strings.Contains(err.Error(), "cret") || strings.Contains(err.Error(), "line2") {
					t.Errorf("the error shows the token: %v", err)
				}
				return
			}
			if err != nil || tok.IsZero() {
				t.Fatalf("ReadTokenFile: %v", err)
			}
		})
	}
	if _, err := api.ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file gave no error")
	}
}

func TestTokenNeverPrints(t *testing.T) {
	tok := api.NewToken("s3cret")
	js, err := json.Marshal(struct{ T api.Token }{tok})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok), string(js)} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("token revealed: %s", s)
		}
	}
}
