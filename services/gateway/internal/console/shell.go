package console

import "net/http"

// shell serves the page every view lives in. It holds no data, so it
// needs no identity: its script signs in and fetches the fragments.
func (c *Console) shell(w http.ResponseWriter, _ *http.Request) {
	render(w, "shell", struct{ Dev bool }{c.Dev})
}
