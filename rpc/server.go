package rpc

import (
	"log/slog"
	"runtime"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/events"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Config is what the gRPC server serves.
type Config struct {
	Definitions *state.Definitions
	Runtime     state.Runtime
	Bus         *events.Bus
	Auth        *Authenticator
	Logger      *slog.Logger
	// Tools runs tool calls; Permissions answers CheckPermission.
	Tools       *tools.Manager
	Permissions Permissions
	Approvals   *policy.Approvals
	// Approvers are whom the policy asks; the person's terminals attach
	// to them with AnswerPermissions. Nil refuses AnswerPermissions.
	Approvers *policy.Approvers
	// MCP is the McpHub; nil serves no MCP servers.
	MCP *mcp.Hub
	// Agent is the agent core; nil serves no Agent service.
	Agent *agent.Service
	// Checkpoints records and undoes the changes of tool calls; nil:
	// checkpoints are off, and the checkpoint RPCs say so.
	Checkpoints *checkpoints.Store
	// MaxMessageSize bounds a request or response, in bytes; gRPC refuses
	// a larger request (RESOURCE_EXHAUSTED) before it reads it.
	MaxMessageSize int
	// Creds are the transport credentials of every connection (TLS on
	// TCP); nil for none.
	Creds credentials.TransportCredentials
}

// NewServer returns a gRPC server with CoreFramework, ToolManager, Agent,
// health and reflection registered. Every method but health and reflection
// needs a bearer token.
func NewServer(cfg Config) *grpc.Server {
	var creds []grpc.ServerOption
	if cfg.Creds != nil {
		creds = append(creds, grpc.Creds(cfg.Creds))
	}
	srv := grpc.NewServer(append(creds,
		grpc.ChainUnaryInterceptor(cfg.Auth.unary),
		grpc.ChainStreamInterceptor(cfg.Auth.stream),
		grpc.MaxRecvMsgSize(cfg.MaxMessageSize),
		grpc.MaxSendMsgSize(cfg.MaxMessageSize),
		// Requests run on reused workers, whose stacks stay grown between
		// requests (growing a fresh 2 KiB stack to a tool call's depth
		// costs more than the call). Enough workers that many concurrent
		// callers rarely spill onto fresh goroutines; few enough that each
		// is reused before a GC shrinks its stack again.
		grpc.NumStreamWorkers(uint32(8*runtime.NumCPU())),
	)...)
	ts := &toolService{tools: cfg.Tools, perms: cfg.Permissions, approvals: cfg.Approvals, approvers: cfg.Approvers, bus: cfg.Bus, apps: cfg.Auth.apps, mcp: cfg.MCP,
		checkpoints: cfg.Checkpoints, questions: newQuestions()}
	nexusv1.RegisterCoreFrameworkServer(srv, &frameworkService{
		defs: cfg.Definitions, runtime: cfg.Runtime, bus: cfg.Bus, logger: cfg.Logger, apps: cfg.Auth.apps, tools: ts,
	})
	nexusv1.RegisterToolManagerServer(srv, ts)
	if cfg.Agent != nil {
		nexusv1.RegisterAgentServer(srv, newAgentService(cfg.Agent, cfg.Auth.apps, ts.questions))
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(nexusv1.CoreFramework_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	return srv
}
