package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
)

// DamagedError says an existing store file cannot be opened or read safely, and why. bbolt maps
// the file into memory and trusts its pages; a file cut short (a full disk, a copy that stopped),
// overwritten, or with a damaged page would make it fault (SIGBUS), panic or read garbage, so
// Open checks the file, then reads every page in use, and returns this instead. The file is
// left untouched. A page damaged after Open is this error too, from the read that meets it.
type DamagedError struct {
	Path    string
	Problem string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("store %s is damaged: %s", e.Path, e.Problem)
}

// bbolt's on-disk format (go.etcd.io/bbolt/internal/common, format version 2): the file is a
// sequence of pages of the size its meta pages record. Pages 0 and 1 are meta pages, written in
// turn by each commit (page txid%2): a 16-byte page header (id, flags, count, overflow), then
// the meta in the machine's byte order: magic, version, page size, flags (4 bytes each), the
// root bucket (root page id, sequence), the freelist page id, the high-water mark (the number of
// pages in use), the transaction id, and an FNV-64a checksum of everything before it.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltMetaFlag   = 0x04
	boltNoFreelist = ^uint64(0)
	pageHeaderSize = 16
	metaSize       = 64 // up to and including the checksum
	metaSummed     = 56 // the bytes the checksum covers
	maxPageSize    = 1 << 24
)

// boltMeta is the part of a meta page the check needs.
type boltMeta struct {
	pageSize           uint32
	root, freelist, hw uint64
	txid               uint64
}

// parseMeta reads the meta page at the start of b, or says why it is not one.
func parseMeta(b []byte) (boltMeta, error) {
	if len(b) < pageHeaderSize+metaSize {
		return boltMeta{}, errors.New("too short for a meta page")
	}
	order := binary.NativeEndian
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	if order.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, errors.New("no bbolt magic number (not a store file)")
	}
	if v := order.Uint32(m[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("bbolt format version %d, not %d", v, boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:metaSummed])
	if h.Sum64() != order.Uint64(m[metaSummed:]) {
		return boltMeta{}, errors.New("checksum does not match (torn or overwritten)")
	}
	if flags := order.Uint16(b[8:]); flags != boltMetaFlag {
		return boltMeta{}, fmt.Errorf("page flags %#x, not a meta page", flags)
	}
	meta := boltMeta{
		pageSize: order.Uint32(m[8:]),
		root:     order.Uint64(m[16:]),
		freelist: order.Uint64(m[32:]),
		hw:       order.Uint64(m[40:]),
		txid:     order.Uint64(m[48:]),
	}
	ps := meta.pageSize
	if ps < 512 || ps > maxPageSize || ps&(ps-1) != 0 {
		return boltMeta{}, fmt.Errorf("page size %d is not a power of two in [512, %d]", ps, maxPageSize)
	}
	if meta.hw < 4 || meta.root >= meta.hw || (meta.freelist >= meta.hw && meta.freelist != boltNoFreelist) {
		return boltMeta{}, fmt.Errorf("page numbers out of range (root %d, freelist %d, pages %d)", meta.root, meta.freelist, meta.hw)
	}
	return meta, nil
}

// checkFile reads the file's meta pages and size without mapping it, and returns what bbolt
// would use (the meta page of the newest whole commit) or a *DamagedError. A meta page that does not check while the other does is what a
// commit cut short by a crash leaves (bbolt then uses the other, the last complete commit): it
// is no error, and torn says which page it was (-1: none).
func checkFile(path string, f *os.File) (m boltMeta, torn int, err error) {
	damaged := func(format string, args ...any) (boltMeta, int, error) {
		return boltMeta{}, -1, &DamagedError{Path: path, Problem: fmt.Sprintf(format, args...)}
	}
	st, err := f.Stat()
	if err != nil {
		return boltMeta{}, -1, fmt.Errorf("reading store %s: %w", path, err)
	}
	if err := notAFile(path, st.Mode()); err != nil {
		return boltMeta{}, -1, err
	}
	if st.Size() == 0 {
		return damaged("the file is empty (0 bytes): it holds no store, not even an empty one")
	}
	size := st.Size()
	first := make([]byte, 4096)
	n, err := f.ReadAt(first, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return boltMeta{}, -1, fmt.Errorf("reading store %s: %w", path, err)
	}
	m0, err0 := parseMeta(first[:n])
	// The second meta page sits one page in; without a good first page, the page size is
	// unknown, so look where each possible size would put it (as bbolt does).
	var m1 boltMeta
	err1 := errors.New("not found")
	if err0 == nil {
		m1, err1 = readMeta(f, int64(m0.pageSize))
	} else {
		for ps := int64(512); ps <= maxPageSize && ps < size; ps *= 2 {
			if m, err := readMeta(f, ps); err == nil && int64(m.pageSize) == ps {
				m1, err1 = m, nil
				break
			}
		}
	}
	torn = -1
	switch {
	case err0 != nil && err1 != nil:
		return damaged("neither meta page is valid (page 0: %v; page 1: %v)", err0, err1)
	case err0 == nil && err1 == nil && m0.pageSize != m1.pageSize:
		return damaged("the meta pages disagree on the page size (%d and %d)", m0.pageSize, m1.pageSize)
	case err0 == nil && err1 == nil:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case err0 == nil:
		m, torn = m0, 1
	default:
		m, torn = m1, 0
	}
	ps := int64(m.pageSize)
	if size%ps != 0 {
		return damaged("its %d bytes are not a whole number of %d-byte pages: it was cut short", size, ps)
	}
	if need := int64(m.hw) * ps; size < need {
		return damaged("its last commit (transaction %d) uses %d pages (%d bytes) but the file holds %d bytes: it was cut short", m.txid, m.hw, need, size)
	}
	if err := checkFreelist(f, m); err != nil {
		return damaged("freelist page %d: %v", m.freelist, err)
	}
	return m, torn, nil
}

// bbolt's freelist page: the page header (flags 0x10), then the free page ids (8 bytes each);
// a count of 0xFFFF means the real count is the first of those 8-byte words.
const (
	boltFreelistFlag = 0x10
	boltCountMax     = 0xFFFF
)

// checkFreelist reads the freelist page m names without mapping it: bbolt reads the free ids
// on its own goroutine in a check and while opening for writing, where a count running past
// the file would fault (SIGSEGV, not a panic). Each id must lie among the pages in use.
func checkFreelist(f *os.File, m boltMeta) error {
	if m.freelist == boltNoFreelist {
		return nil // not kept in the file (NoFreelistSync): bbolt rebuilds it from the tree
	}
	ps := int64(m.pageSize)
	h := make([]byte, pageHeaderSize+8)
	if _, err := f.ReadAt(h, int64(m.freelist)*ps); err != nil {
		return fmt.Errorf("reading it: %w", err)
	}
	order := binary.NativeEndian
	id, flags, count, overflow := order.Uint64(h), order.Uint16(h[8:]), uint64(order.Uint16(h[10:])), uint64(order.Uint32(h[12:]))
	skip := uint64(0)
	if count == boltCountMax {
		count, skip = order.Uint64(h[pageHeaderSize:]), 1
	}
	span := overflow + 1
	switch {
	case id != m.freelist:
		return fmt.Errorf("the page says it is page %d", id)
	case flags != boltFreelistFlag:
		return fmt.Errorf("page flags %#x, not a freelist page", flags)
	case span > m.hw-m.freelist:
		return fmt.Errorf("%d overflow pages run past the %d pages in use", overflow, m.hw)
	case count > m.hw || (skip+count)*8 > uint64(span*uint64(ps))-pageHeaderSize:
		return fmt.Errorf("%d free ids do not fit in %d pages", count, span)
	}
	ids := make([]byte, count*8)
	if _, err := f.ReadAt(ids, int64(m.freelist)*ps+pageHeaderSize+int64(skip)*8); err != nil {
		return fmt.Errorf("reading it: %w", err)
	}
	for i := 0; i < len(ids); i += 8 {
		if free := order.Uint64(ids[i:]); free < 2 || free >= m.hw {
			return fmt.Errorf("free page id %d is outside the %d pages in use", free, m.hw)
		}
	}
	return nil
}

// notAFile is a *DamagedError for anything at a store's path but a regular file.
func notAFile(path string, mode fs.FileMode) error {
	switch {
	case mode.IsDir():
		return &DamagedError{Path: path, Problem: "it is a folder, not a file"}
	case !mode.IsRegular():
		return &DamagedError{Path: path, Problem: "it is not a regular file but " + kindOf(mode)}
	}
	return nil
}

func kindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a device"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("of type %s", mode.Type())
}

// readMeta reads a meta page at off.
func readMeta(f *os.File, off int64) (boltMeta, error) {
	b := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(b, off); err != nil {
		return boltMeta{}, fmt.Errorf("reading at %d: %w", off, err)
	}
	return parseMeta(b)
}
