// SPDX-License-Identifier: Apache-2.0
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Health/Check on os.Args[1] ("host:port"; the system's trust store, HTTPS_PROXY honoured), then a
// call to a method the proxy's rules deny: one line each.
func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, os.Args[1], grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(nil, "")),
		grpc.WithBlock())
	if err != nil {
		fmt.Println("dial", err)
		os.Exit(3)
	}
	defer conn.Close()
	reply, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println("check error", status.Code(err), err)
	} else {
		fmt.Println("check", reply.GetStatus())
	}
	out := new(healthpb.HealthCheckResponse)
	err = conn.Invoke(ctx, "/denied.Service/Call", &healthpb.HealthCheckRequest{}, out)
	fmt.Println("denied", status.Code(err), err)
}
