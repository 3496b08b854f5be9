package etcdstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/scaler/store"
)

// page is how many keys one range read of a walk fetches.
const page = 64

var errReadOnly = errors.New("a write in a read-only transaction")

// etcdKV is one transaction: reads pinned at the revision of the first, writes gathered for
// the commit (and seen by the transaction's own reads).
type etcdKV struct {
	b   *Backend
	ctx context.Context
	// timeout, if set, bounds each read on its own (a View: a walk of the whole store, as a
	// backup makes, is many reads); an Update is bounded as a whole by its ctx.
	timeout  time.Duration
	writable bool
	rev      int64
	puts     map[string][]byte // full key -> value
	dels     map[string]bool   // full keys deleted (none of them in puts)
	trims    map[string]uint64 // a log's entries prefix -> the first sequence kept
	// lasts is a log's entries prefix -> its last sequence number, stored or appended in this
	// transaction: only Append writes entries and reads are pinned, so one read finds it for
	// all the transaction's appends to the log (a migration appends 100 entries a transaction).
	lasts map[string]uint64
}

func (k *etcdKV) get(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if k.rev != 0 {
		opts = append(opts, clientv3.WithRev(k.rev))
	}
	ctx := k.ctx
	if k.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.timeout)
		defer cancel()
	}
	resp, err := k.b.cli.Get(ctx, key, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading etcd: %w", err)
	}
	if k.rev == 0 {
		k.rev = resp.Header.Revision
	}
	return resp, nil
}

func (k *etcdKV) put(key string, v []byte) error {
	if !k.writable {
		return errReadOnly
	}
	if k.puts == nil {
		k.puts = map[string][]byte{}
	}
	k.puts[key] = v
	delete(k.dels, key)
	return nil
}

// Get returns nil only when the key is not there: a key holding an empty value (etcd gives
// nil for it) is an empty, non-nil value, which does not decode, not a record never written.
func (k *etcdKV) Get(bucket, key string) ([]byte, error) {
	full := k.b.dataKey(bucket, key)
	if v, ok := k.puts[full]; ok {
		return nonNil(v), nil
	}
	if k.dels[full] {
		return nil, nil
	}
	resp, err := k.get(full)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return nonNil(resp.Kvs[0].Value), nil
}

func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func (k *etcdKV) Put(bucket, key string, value []byte) error {
	return k.put(k.b.dataKey(bucket, key), value)
}

// Delete gathers the key's deletion for the commit; a put of it here before is dropped (a
// transaction may not put and delete one key).
func (k *etcdKV) Delete(bucket, key string) error {
	if !k.writable {
		return errReadOnly
	}
	full := k.b.dataKey(bucket, key)
	delete(k.puts, full)
	if k.dels == nil {
		k.dels = map[string]bool{}
	}
	k.dels[full] = true
	return nil
}

func (k *etcdKV) ForEach(bucket string, fn func(key string, value []byte) error) error {
	pfx := k.b.bucketPrefix(bucket)
	resp, err := k.get(pfx, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	each := func(full string, v []byte) error {
		key, err := url.PathUnescape(strings.TrimPrefix(full, pfx))
		if err != nil {
			return &store.RecordError{Bucket: bucket, Key: full, Err: fmt.Errorf("key does not unescape: %w", err)}
		}
		return fn(key, v)
	}
	for _, kv := range resp.Kvs {
		full, v := string(kv.Key), kv.Value
		if k.dels[full] {
			continue
		}
		if p, ok := k.puts[full]; ok {
			v = p
		}
		seen[full] = true
		if err := each(full, v); err != nil {
			return err
		}
	}
	for _, full := range slices.Sorted(maps.Keys(k.puts)) {
		if strings.HasPrefix(full, pfx) && !seen[full] {
			if err := each(full, k.puts[full]); err != nil {
				return err
			}
		}
	}
	return nil
}

// entry is one log entry.
type entry struct {
	seq uint64
	v   []byte
}

// pending returns the entries this transaction appended to the log at prefix, oldest first.
func (k *etcdKV) pending(entries string) ([]entry, error) {
	var out []entry
	for full, v := range k.puts {
		if rest, ok := strings.CutPrefix(full, entries); ok {
			seq, err := parseSeq(entries, rest)
			if err != nil {
				return nil, err
			}
			out = append(out, entry{seq, v})
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
	return out, nil
}

func parseSeq(entries, rest string) (uint64, error) {
	seq, err := strconv.ParseUint(rest, 16, 64)
	if err != nil || len(rest) != 16 {
		return 0, &store.RecordError{Bucket: entries, Key: rest, Err: fmt.Errorf("key is not a sequence number")}
	}
	return seq, nil
}

func (k *etcdKV) Append(log, name string, value []byte) (uint64, error) {
	entries := k.b.entriesPrefix(log, name)
	last, ok := k.lasts[entries]
	if !ok {
		resp, err := k.get(entries, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil {
			return 0, err
		}
		if len(resp.Kvs) > 0 {
			if last, err = parseSeq(entries, strings.TrimPrefix(string(resp.Kvs[0].Key), entries)); err != nil {
				return 0, err
			}
		}
	}
	seq := last + 1
	if err := k.put(entryKey(entries, seq), value); err != nil {
		return 0, err
	}
	if k.lasts == nil {
		k.lasts = map[string]uint64{}
	}
	k.lasts[entries] = seq
	return seq, nil
}

func (k *etcdKV) Walk(log, name string, newestFirst bool, fn func(seq uint64, value []byte) (bool, error)) error {
	entries := k.b.entriesPrefix(log, name)
	mine, err := k.pending(entries)
	if err != nil {
		return err
	}
	below := k.trims[entries]
	emit := func(es []entry) (bool, error) {
		for _, e := range es {
			if e.seq < below {
				continue
			}
			if more, err := fn(e.seq, e.v); err != nil || !more {
				return false, err
			}
		}
		return true, nil
	}
	if newestFirst {
		slices.Reverse(mine)
		if more, err := emit(mine); err != nil || !more {
			return err
		}
	}
	// The stored entries, a page at a time: [from, to) narrows as the walk goes.
	from, to := entries, clientv3.GetPrefixRangeEnd(entries)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(to), clientv3.WithLimit(page), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if newestFirst {
			opts[2] = clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)
		}
		resp, err := k.get(from, opts...)
		if err != nil {
			return err
		}
		es := make([]entry, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			seq, err := parseSeq(entries, strings.TrimPrefix(string(kv.Key), entries))
			if err != nil {
				return err
			}
			es = append(es, entry{seq, kv.Value})
		}
		if more, err := emit(es); err != nil || !more {
			return err
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		last := string(resp.Kvs[len(resp.Kvs)-1].Key)
		if newestFirst {
			to = last
		} else {
			from = last + "\x00"
		}
	}
	if !newestFirst {
		_, err := emit(mine)
		return err
	}
	return nil
}

func (k *etcdKV) Trim(log, name string, below uint64) error {
	if !k.writable {
		return errReadOnly
	}
	entries := k.b.entriesPrefix(log, name)
	if k.trims == nil {
		k.trims = map[string]uint64{}
	}
	k.trims[entries] = max(k.trims[entries], below)
	// An entry appended here and trimmed at once never reaches etcd: a transaction may not
	// put a key inside a range it deletes.
	mine, err := k.pending(entries)
	if err != nil {
		return err
	}
	for _, e := range mine {
		if e.seq < below {
			delete(k.puts, entryKey(entries, e.seq))
		}
	}
	return nil
}

// Names lists the log's names, one range read of a single key per name: each read starts
// after the last name's entries.
func (k *etcdKV) Names(log string) ([]string, error) {
	pfx := k.b.logNamesPrefix(log)
	seen := map[string]bool{}
	var out []string
	add := func(escaped string) error {
		if seen[escaped] {
			return nil
		}
		seen[escaped] = true
		name, err := url.PathUnescape(escaped)
		if err != nil {
			return &store.RecordError{Bucket: log, Key: escaped, Err: fmt.Errorf("name does not unescape: %w", err)}
		}
		out = append(out, name)
		return nil
	}
	from, end := pfx, clientv3.GetPrefixRangeEnd(pfx)
	for {
		resp, err := k.get(from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		if len(resp.Kvs) == 0 {
			break
		}
		escaped, _, _ := strings.Cut(strings.TrimPrefix(string(resp.Kvs[0].Key), pfx), "/")
		if err := add(escaped); err != nil {
			return nil, err
		}
		from = pfx + escaped + "0" // '0' follows '/': past every entry of this name
	}
	for full := range k.puts {
		if rest, ok := strings.CutPrefix(full, pfx); ok {
			escaped, _, _ := strings.Cut(rest, "/")
			if err := add(escaped); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// bytes is what the transaction's puts weigh in its request, keys and values (etcd's
// --max-request-bytes bounds the whole).
func (k *etcdKV) bytes() int {
	n := 0
	for key, v := range k.puts {
		n += len(key) + len(v)
	}
	return n
}

// ops are the transaction's writes as etcd operations.
func (k *etcdKV) ops() []clientv3.Op {
	var ops []clientv3.Op
	for _, key := range slices.Sorted(maps.Keys(k.puts)) {
		ops = append(ops, clientv3.OpPut(key, string(k.puts[key])))
	}
	for _, key := range slices.Sorted(maps.Keys(k.dels)) {
		ops = append(ops, clientv3.OpDelete(key))
	}
	for _, entries := range slices.Sorted(maps.Keys(k.trims)) {
		ops = append(ops, clientv3.OpDelete(entries, clientv3.WithRange(entryKey(entries, k.trims[entries]))))
	}
	return ops
}
