// srfake — a Confluent-compatible Schema Registry for the integration
// tests: franz-go's in-memory srfake (the registry's REST API) served on
// 127.0.0.1, with control endpoints the tests drive:
//
//	POST /__control/outage?on=1   answer 503 to every registry request
//	POST /__control/outage?on=0   answer normally again
//	GET  /__control/stats         {"schema_gets": N, "outage": bool}
//
// Usage: srfake -url-file FILE [-addr 127.0.0.1:0] [-auth user:password]
//
//	[-tls-cert CERT -tls-key KEY -tls-url-file FILE2]
//
// It writes its base URL to FILE once it listens, and serves until killed;
// with a certificate it also serves the same registry over https on a
// second port of 127.0.0.1, whose URL goes to FILE2.
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	urlFile := flag.String("url-file", "", "file to write the base URL to (required)")
	auth := flag.String("auth", "", "user:password required as HTTP basic authentication")
	tlsCert := flag.String("tls-cert", "", "PEM certificate to serve https with")
	tlsKey := flag.String("tls-key", "", "PEM key of -tls-cert")
	tlsURLFile := flag.String("tls-url-file", "", "file to write the https base URL to")
	flag.Parse()
	if *urlFile == "" {
		fmt.Fprintln(os.Stderr, "usage: srfake -url-file FILE [-addr 127.0.0.1:0] [-auth user:password]")
		os.Exit(2)
	}
	var opts []srfake.Option
	if *auth != "" {
		opts = append(opts, srfake.WithAuth("Basic "+base64.StdEncoding.EncodeToString([]byte(*auth))))
	}
	reg := srfake.NewRegistry(opts...)
	var outage atomic.Bool
	var gets atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/__control/outage" && r.Method == http.MethodPost:
			outage.Store(r.URL.Query().Get("on") == "1")
			w.WriteHeader(http.StatusNoContent)
			return true
		case r.URL.Path == "/__control/stats":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"schema_gets": gets.Load(), "outage": outage.Load()})
			return true
		}
		if outage.Load() {
			http.Error(w, `{"error_code":50301,"message":"registry outage (srfake)"}`, http.StatusServiceUnavailable)
			return true
		}
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			gets.Add(1)
		}
		return false
	})
	if *tlsCert != "" {
		tln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatalf("srfake: listen: %v", err)
		}
		go func() {
			log.Fatal(http.ServeTLS(tln, reg.Handler(), *tlsCert, *tlsKey))
		}()
		writeURL(*tlsURLFile, "https://"+tln.Addr().String())
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("srfake: listen %s: %v", *addr, err)
	}
	writeURL(*urlFile, "http://"+ln.Addr().String())
	log.Fatal(http.Serve(ln, reg.Handler()))
}

// writeURL writes url to file atomically (a reader sees all of it or none).
func writeURL(file, url string) {
	if file == "" {
		log.Fatalf("srfake: no file to write %s to", url)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(url+"\n"), 0o644); err != nil {
		log.Fatalf("srfake: %v", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		log.Fatalf("srfake: %v", err)
	}
	log.Printf("srfake: serving the Schema Registry API on %s", url)
}
