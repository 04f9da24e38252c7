// SPDX-License-Identifier: Apache-2.0
package main

import (
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A gRPC server with the health service, TLS with the test's certificate, on 127.0.0.2: prints its
// port, then serves until killed.
func main() {
	creds, err := credentials.NewServerTLSFromFile(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	listener, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server := grpc.NewServer(grpc.Creds(creds))
	checks := health.NewServer()
	checks.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, checks)
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	server.Serve(listener)
}
