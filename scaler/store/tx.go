package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Tx is one transaction on the store; it is valid only inside the function given to Update or
// View.
type Tx struct {
	tx  *bolt.Tx
	ret Retention
}

// Node returns node's record, or the zero Node when there is none.
func (t *Tx) Node(name string) (Node, error) {
	b := t.tx.Bucket([]byte(bucketNodes)).Get([]byte(name))
	if b == nil {
		return Node{}, nil
	}
	n, err := decodeNode(b)
	if err != nil {
		return Node{}, &RecordError{Bucket: bucketNodes, Key: name, Err: err}
	}
	return n, nil
}

// Nodes returns every node's record by name; one bad record fails the whole read.
func (t *Tx) Nodes() (map[string]Node, error) {
	out := map[string]Node{}
	err := t.tx.Bucket([]byte(bucketNodes)).ForEach(func(k, v []byte) error {
		n, err := decodeNode(v)
		if err != nil {
			return &RecordError{Bucket: bucketNodes, Key: string(k), Err: err}
		}
		out[string(k)] = n
		return nil
	})
	return out, err
}

// PutNode writes node's record.
func (t *Tx) PutNode(name string, n Node) error {
	if name == "" || n.State == "" {
		return fmt.Errorf("writing node %q: name and state are required", name)
	}
	b, err := encode(nodeV1{V: recordVersion, Node: n})
	if err != nil {
		return fmt.Errorf("writing node %s: %w", name, err)
	}
	if err := t.tx.Bucket([]byte(bucketNodes)).Put([]byte(name), b); err != nil {
		return fmt.Errorf("writing node %s: %w", name, err)
	}
	return nil
}

// Global returns the global record (zero if never written).
func (t *Tx) Global() (Global, error) {
	b := t.tx.Bucket([]byte(bucketGlobal)).Get([]byte(keyGlobal))
	if b == nil {
		return Global{}, nil
	}
	g, err := decodeGlobal(b)
	if err != nil {
		return Global{}, &RecordError{Bucket: bucketGlobal, Key: keyGlobal, Err: err}
	}
	return g, nil
}

// PutGlobal writes the global record.
func (t *Tx) PutGlobal(g Global) error {
	b, err := encode(globalV1{V: recordVersion, Global: g})
	if err != nil {
		return fmt.Errorf("writing global record: %w", err)
	}
	if err := t.tx.Bucket([]byte(bucketGlobal)).Put([]byte(keyGlobal), b); err != nil {
		return fmt.Errorf("writing global record: %w", err)
	}
	return nil
}
