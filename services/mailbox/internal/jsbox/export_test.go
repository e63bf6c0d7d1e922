package jsbox

// CollectorWaits reports whether a Capture of id waits on b for a
// completion to hand it the capture: the moment a test completes to see
// the hand-off, which nothing outside the box can observe.
func CollectorWaits(b *Box, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters[id] {
		if w.collects {
			return true
		}
	}
	return false
}

// Recalls reports whether b keeps the announced answer of id for a
// collection to come (recentAnswers): the moment a test collects to see
// the collection skip its read.
func Recalls(b *Box, id string) bool {
	b.recent.mu.Lock()
	defer b.recent.mu.Unlock()
	_, ok := b.recent.byID[id]
	return ok
}

// PrecountedHeader marks a queue message whose slot was created with its
// first hand-off counted; QueueSubject is a client's queue.
const PrecountedHeader = headerPrecounted

func QueueSubject(client string) string { return queuePrefix + client }

// Spoiled reports whether an Invoke's hold on the precount of id heard of
// a cancel: the moment a test takes to see the delivery checked against
// the slot.
func Spoiled(b *Box, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters[id] {
		if w.holds && w.spoiled {
			return true
		}
	}
	return false
}
