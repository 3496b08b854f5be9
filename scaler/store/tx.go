package store

import (
	"fmt"
)

// Tx is one transaction on the store; it is valid only inside the function given to Update or
// View.
type Tx struct {
	kv  KV
	ret Retention
}

// getRecord reads key of bucket with decode: the zero T when there is none, and a
// *RecordError naming where it lies when it does not decode. A new kind of record is one
// method pair over getRecord and putRecord, and one line in recordBuckets.
func getRecord[T any](kv KV, bucket, key string, decode func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := kv.Get(bucket, key)
	if err != nil || b == nil {
		return zero, err
	}
	v, err := decode(b)
	if err != nil {
		return zero, &RecordError{Bucket: bucket, Key: key, Err: err}
	}
	return v, nil
}

// putRecord writes v (a versioned record) at key of bucket; what names the record in errors.
func putRecord(kv KV, bucket, key, what string, v any) error {
	b, err := encode(v)
	if err == nil {
		err = kv.Put(bucket, key, b)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}

// recordBuckets are the buckets of single records, with the check a copy makes of each value
// (Copy: rotactl store migrate, an etcd store's backup).
func recordBuckets() []struct {
	name  string
	check func([]byte) error
} {
	return []struct {
		name  string
		check func([]byte) error
	}{
		{bucketNodes, func(b []byte) error { _, err := decodeNode(b); return err }},
		{bucketGlobal, func(b []byte) error { _, err := decodeGlobal(b); return err }},
		{bucketLearned, func(b []byte) error { _, err := decodeLearned(b); return err }},
		{bucketIdle, func(b []byte) error { _, err := decodeIdle(b); return err }},
		{bucketBooks, func(b []byte) error { _, err := decodeBooks(b); return err }},
	}
}

// Node returns node's record, or the zero Node when there is none.
func (t *Tx) Node(name string) (Node, error) {
	return getRecord(t.kv, bucketNodes, name, decodeNode)
}

// Nodes returns every node's record by name; one bad record fails the whole read.
func (t *Tx) Nodes() (map[string]Node, error) {
	out := map[string]Node{}
	err := t.kv.ForEach(bucketNodes, func(k string, v []byte) error {
		n, err := decodeNode(v)
		if err != nil {
			return &RecordError{Bucket: bucketNodes, Key: k, Err: err}
		}
		out[k] = n
		return nil
	})
	return out, err
}

// PutNode writes node's record.
func (t *Tx) PutNode(name string, n Node) error {
	if name == "" || n.State == "" {
		return fmt.Errorf("writing node %q: name and state are required", name)
	}
	return putRecord(t.kv, bucketNodes, name, "node "+name, nodeV1{V: recordVersion, Node: n})
}

// DeleteNode removes node's record (its audit log stays); a node without one is no error.
func (t *Tx) DeleteNode(name string) error {
	if err := t.kv.Delete(bucketNodes, name); err != nil {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// Global returns the global record (zero if never written).
func (t *Tx) Global() (Global, error) {
	return getRecord(t.kv, bucketGlobal, keyGlobal, decodeGlobal)
}

// PutGlobal writes the global record.
func (t *Tx) PutGlobal(g Global) error {
	return putRecord(t.kv, bucketGlobal, keyGlobal, "global record", globalV1{V: recordVersion, Global: g})
}
