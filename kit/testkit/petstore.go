package testkit

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// PetStoreSpec is an OpenAPI 3.1 document of a small pet store: path,
// query, header and JSON body parameters, a 404, a long response, and two
// operations a bridge cannot call (a form body, a callback).
//
//go:embed testdata/petstore.yaml
var PetStoreSpec string

// PhotoBytes is how long the pet store's photo is: longer than a capture
// takes by default.
const PhotoBytes = 1 << 20

// PetStore is the document's API served on loopback, keeping each request
// it was sent. It serves its document at /openapi.yaml, and the API under
// /v1 (the document's relative server URL).
type PetStore struct {
	*httptest.Server

	mu       sync.Mutex
	pets     []pet
	requests []*http.Request
}

type pet struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}

// NewPetStore serves a pet store with two pets until the test ends.
func NewPetStore(t TB) *PetStore {
	t.Helper()
	ps := &PetStore{pets: []pet{{1, "Rex", "dog"}, {2, "Tom", "cat"}}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		fmt.Fprint(w, PetStoreSpec)
	})
	mux.HandleFunc("GET /v1/pets", ps.list)
	mux.HandleFunc("POST /v1/pets", ps.create)
	mux.HandleFunc("GET /v1/pets/{petId}", ps.get)
	mux.HandleFunc("DELETE /v1/pets/{petId}", ps.remove)
	mux.HandleFunc("GET /v1/pets/{petId}/photo", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("p", PhotoBytes))
	})
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		ps.requests = append(ps.requests, r.Clone(r.Context()))
		ps.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	return ps
}

// SpecURL is where the store serves its document.
func (ps *PetStore) SpecURL() string { return ps.URL + "/openapi.yaml" }

// Requests are the requests served so far, the document's included.
func (ps *PetStore) Requests() []*http.Request {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.requests)
}

func (ps *PetStore) list(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	tags := r.URL.Query()["tag"]
	ps.mu.Lock()
	out := []pet{}
	for _, p := range ps.pets {
		if len(out) < limit && (len(tags) == 0 || slices.Contains(tags, p.Tag)) {
			out = append(out, p)
		}
	}
	ps.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (ps *PetStore) create(w http.ResponseWriter, r *http.Request) {
	var p pet
	if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&p) != nil || p.Name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a pet needs a JSON body with a name"})
		return
	}
	ps.mu.Lock()
	p.ID = len(ps.pets) + 1
	ps.pets = append(ps.pets, p)
	ps.mu.Unlock()
	writeJSON(w, http.StatusCreated, p)
}

func (ps *PetStore) get(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.PathValue("petId"))
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.pets {
		if p.ID == id {
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no pet " + r.PathValue("petId")})
}

func (ps *PetStore) remove(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Reason") == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "say why in X-Reason"})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
