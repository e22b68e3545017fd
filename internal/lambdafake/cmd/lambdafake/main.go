// Command lambdafake serves AWS Lambda's Invoke API in front of a
// moto_server (see package lambdafake): scripts/stack.sh starts it for the
// demo and exports AWS_ENDPOINT_URL_LAMBDA.
//
//	lambdafake -listen 127.0.0.1:0 -upstream http://127.0.0.1:5000
//
// It prints its URL on the first line of stdout; GET /lambdafake/invocations
// lists the invocations it accepted (JSON).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/dlqctl/dlqctl/internal/lambdafake"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", os.Getenv("DLQCTL_MOTO_ENDPOINT"), "moto_server URL")
	flag.Parse()
	if *upstream == "" {
		log.Fatal("lambdafake: -upstream (or DLQCTL_MOTO_ENDPOINT) names the moto_server to sit in front of")
	}
	s, err := lambdafake.New(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /lambdafake/invocations", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Invocations())
	})
	mux.Handle("/", s)
	fmt.Printf("http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
