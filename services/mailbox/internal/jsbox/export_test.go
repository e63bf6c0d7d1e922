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
