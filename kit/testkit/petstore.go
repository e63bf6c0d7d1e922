package testkit

import (
	"os"
	"path/filepath"
	"time"
)

// The example API (examples/petstore), its document, and how long its
// photo is: longer than a capture takes by default.
const (
	petStorePkg = "github.com/switchboard-run/switchboard/examples/petstore"
	PhotoBytes  = 1 << 20
)

// PetStore is the example pet store API running as a process on a
// loopback port: its document at SpecURL, its API under URL + "/v1".
type PetStore struct {
	URL string
}

// SpecURL is where the store serves its OpenAPI document.
func (ps PetStore) SpecURL() string { return ps.URL + "/openapi.yaml" }

// NewPetStore builds and starts the example pet store (with two pets, Rex
// and Tom) until the test ends; args are its flags (--api-key).
func NewPetStore(t TB, args ...string) PetStore {
	t.Helper()
	addr := FreeAddr(t)
	Start(t, Build(t, petStorePkg), append([]string{"--listen", addr}, args...)...)
	WaitListening(t, addr, 30*time.Second)
	return PetStore{URL: "http://" + addr}
}

// PetStoreSpec is the example pet store's OpenAPI 3.1 document: path,
// query, header and JSON body parameters, a 404, a long response, and two
// operations a bridge cannot call (a form body, a callback).
func PetStoreSpec(t TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "examples", "petstore", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
