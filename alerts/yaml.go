package alerts

import (
	"bytes"
	"errors"
	"reflect"

	"gopkg.in/yaml.v3"
)

// marshal writes v as YAML (indented by two) after head, and reads it back: yaml.v3 writes
// some strings as literal blocks that read back as other strings (a leading line break is
// lost, a tab after one is refused: go-yaml issue 963 and its kin), and a rule file that says
// something other than v is an error, never a file.
func marshal[T any](head string, v T) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(head)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	var back T
	if err := yaml.Unmarshal(b.Bytes(), &back); err != nil || !reflect.DeepEqual(back, v) {
		return nil, errors.New("the YAML does not read back as written (a string that starts with a line break or holds a tab after one?)")
	}
	return b.Bytes(), nil
}
