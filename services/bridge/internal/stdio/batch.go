package stdio

import (
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// batches pairs the requests that came in one batch with their answers,
// which go back as one array once all are in (JSON-RPC 2.0, "Batch"), as
// the SDK's stdio connection does.
type batches struct {
	mu   sync.Mutex
	open map[jsonrpc.ID]*batch // by request id, while unanswered
}

type batch struct {
	unanswered map[jsonrpc.ID]int // index in answers
	answers    []*jsonrpc.Response
}

// add records the requests in msgs, one batch.
func (b *batches) add(msgs []jsonrpc.Message) error {
	var bt *batch
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue // a notification or a response is not answered
		}
		if bt == nil {
			bt = &batch{unanswered: map[jsonrpc.ID]int{}}
		}
		if _, dup := bt.unanswered[req.ID]; dup {
			return fmt.Errorf("a batch from the server holds request id %v twice", req.ID.Raw())
		}
		bt.unanswered[req.ID] = len(bt.answers)
		bt.answers = append(bt.answers, nil)
	}
	if bt == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range bt.unanswered {
		if _, ok := b.open[id]; ok {
			return fmt.Errorf("a batch from the server reuses request id %v, which is still unanswered", id.Raw())
		}
	}
	if b.open == nil {
		b.open = map[jsonrpc.ID]*batch{}
	}
	for id := range bt.unanswered {
		b.open[id] = bt
	}
	return nil
}

// answer files resp if it answers a request of a batch: inBatch says so,
// and done is the batch's answers once resp was the last one missing.
func (b *batches) answer(resp *jsonrpc.Response) (done []*jsonrpc.Response, inBatch bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt, ok := b.open[resp.ID]
	if !ok {
		return nil, false
	}
	delete(b.open, resp.ID)
	bt.answers[bt.unanswered[resp.ID]] = resp
	delete(bt.unanswered, resp.ID)
	if len(bt.unanswered) > 0 {
		return nil, true
	}
	return bt.answers, true
}
