package sim

import "container/heap"

// The event kinds.
const (
	evEnd   uint8 = iota // a job ends (id: job)
	evReady              // a booting server is ready (id: server)
	evOff                // a server finished powering off (id: server)
)

// event is something due at a time. Ties are broken by kind and id so the order, and so the
// replay, never depends on the heap's layout.
type event struct {
	t    int64
	kind uint8
	id   int32
	gen  int32
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.id < b.id
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (h *eventHeap) push(e event) { heap.Push(h, e) }
func (h *eventHeap) pop() event   { return heap.Pop(h).(event) }
