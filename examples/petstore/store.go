package main

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// spec is the API's document.
//
//go:embed openapi.yaml
var spec string

// photoBytes is how long a pet's photo is: longer than a capture takes by
// default, to show the bridge's cut.
const photoBytes = 1 << 20

type pet struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
}

// store is the pets, in memory.
type store struct {
	key  string
	mu   sync.Mutex
	pets []pet
}

func newStore(key string) *store {
	return &store{key: key, pets: []pet{{1, "Rex", "dog"}, {2, "Tom", "cat"}}}
}

func (s *store) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write([]byte(spec))
	})
	api := http.NewServeMux()
	api.HandleFunc("GET /v1/pets", s.list)
	api.HandleFunc("POST /v1/pets", s.create)
	api.HandleFunc("GET /v1/pets/{petId}", s.get)
	api.HandleFunc("DELETE /v1/pets/{petId}", s.remove)
	api.HandleFunc("GET /v1/pets/{petId}/photo", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Repeat("p", photoBytes)))
	})
	mux.Handle("/v1/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.key != "" && r.Header.Get("X-Api-Key") != s.key {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "X-Api-Key is missing or wrong"})
			return
		}
		api.ServeHTTP(w, r)
	}))
	return mux
}

func (s *store) list(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "limit " + strconv.Quote(v) + " is not a positive whole number"})
			return
		}
		limit = n
	}
	tags := r.URL.Query()["tag"]
	s.mu.Lock()
	out := []pet{}
	for _, p := range s.pets {
		if len(out) < limit && (len(tags) == 0 || slices.Contains(tags, p.Tag)) {
			out = append(out, p)
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *store) create(w http.ResponseWriter, r *http.Request) {
	var p pet
	if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&p) != nil || p.Name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a pet needs a JSON body with a name"})
		return
	}
	s.mu.Lock()
	p.ID = len(s.pets) + 1
	s.pets = append(s.pets, p)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, p)
}

func (s *store) get(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.PathValue("petId"))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pets {
		if p.ID == id {
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no pet " + r.PathValue("petId")})
}

func (s *store) remove(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Reason") == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "say why in X-Reason"})
		return
	}
	id, _ := strconv.Atoi(r.PathValue("petId"))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.pets {
		if p.ID == id {
			s.pets = slices.Delete(s.pets, i, i+1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no pet " + r.PathValue("petId")})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
