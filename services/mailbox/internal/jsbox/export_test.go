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
