package clickd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/clickd/clickd/client/go/clickdpb"
)

// RetryPolicy says how retried calls back off (the C++ and Python clients'
// policy). Failed attempt k (k = 1, 2, ...) is followed by a sleep of
// min(InitialBackoff * Multiplier^(k-1), MaxBackoff) times a uniform factor
// in [1 - Jitter, 1 + Jitter]. A call without an idempotency key has one
// deadline for all its attempts: a sleep that would reach it is not slept,
// and the last UNAVAILABLE is returned at once. A keyed call gives each
// attempt a deadline of its own.
type RetryPolicy struct {
	MaxAttempts    int // including the first; 1 disables retries
	InitialBackoff time.Duration
	Multiplier     float64
	MaxBackoff     time.Duration
	Jitter         float64
}

// DefaultRetryPolicy: 3 attempts, 50 ms growing by 2 up to 1 s, ±20 %.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 3, InitialBackoff: 50 * time.Millisecond, Multiplier: 2,
		MaxBackoff: time.Second, Jitter: 0.2}
}

func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("clickd: MaxAttempts is %d; must be >= 1", p.MaxAttempts)
	case p.InitialBackoff <= 0 || p.InitialBackoff > p.MaxBackoff:
		return errors.New("clickd: the retry policy needs 0 < InitialBackoff <= MaxBackoff")
	case !(p.Multiplier >= 1) || p.Multiplier > 1e9:
		return errors.New("clickd: Multiplier must be finite and >= 1")
	case !(p.Jitter >= 0 && p.Jitter <= 1):
		return errors.New("clickd: Jitter must be in [0, 1]")
	}
	return nil
}

// Backoff is the sleep after failed attempt `attempt` (1-based), before jitter
// is applied by the client.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	base := float64(p.InitialBackoff)
	for i := 1; i < attempt && base < float64(p.MaxBackoff); i++ {
		base *= p.Multiplier
	}
	return time.Duration(min(base, float64(p.MaxBackoff)))
}

type options struct {
	timeout     time.Duration
	retry       RetryPolicy
	token       string
	tls         bool
	rootPEM     []byte
	certPEM     []byte
	keyPEM      []byte
	serverName  string
	dialOptions []grpc.DialOption
	sleep       func(context.Context, time.Duration) error
}

// Option configures a Client.
type Option func(*options) error

// WithTimeout sets every call's deadline (5 s by default), used when the
// call's context has no earlier one: for Predict and an unkeyed Feedback it
// covers every attempt and backoff, for a keyed Update or Feedback it is
// each attempt's, for a stream the whole stream.
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("clickd: timeout is %v; must be positive", d)
		}
		o.timeout = d
		return nil
	}
}

// WithRetry sets the RetryPolicy of the retried calls.
func WithRetry(p RetryPolicy) Option {
	return func(o *options) error {
		if err := p.validate(); err != nil {
			return err
		}
		o.retry = p
		return nil
	}
}

// WithToken sends `authorization: Bearer TOKEN` on every call, streams
// included (docs/security.md).
func WithToken(token string) Option {
	return func(o *options) error {
		if token == "" || strings.ContainsAny(token, " \t\r\n") {
			return errors.New("clickd: the token must be non-empty and have no spaces")
		}
		o.token = token
		return nil
	}
}

// WithTLS uses TLS, trusting the CA in rootPEM (nil: the system's roots).
func WithTLS(rootPEM []byte) Option {
	return func(o *options) error {
		o.tls = true
		o.rootPEM = rootPEM
		return nil
	}
}

// WithClientCertificate presents a client certificate (mTLS); implies TLS.
func WithClientCertificate(certPEM, keyPEM []byte) Option {
	return func(o *options) error {
		o.tls = true
		o.certPEM, o.keyPEM = certPEM, keyPEM
		return nil
	}
}

// WithServerName verifies the server's certificate against this name
// instead of the target's host.
func WithServerName(name string) Option {
	return func(o *options) error {
		o.serverName = name
		return nil
	}
}

// WithDialOptions adds gRPC dial options (interceptors, message sizes, ...).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) error {
		o.dialOptions = append(o.dialOptions, opts...)
		return nil
	}
}

// WithSleep replaces the sleep between attempts (the tests record it).
func WithSleep(sleep func(context.Context, time.Duration) error) Option {
	return func(o *options) error {
		o.sleep = sleep
		return nil
	}
}

// Client is a clickd client over one gRPC connection; see the package doc.
type Client struct {
	conn      *grpc.ClientConn
	rpc       pb.ClickdClient
	opts      options
	mu        sync.Mutex // guards rng
	rng       *rand.Rand
	bearer    string
	closeOnce sync.Once
}

// New connects to target ("host:port"). The connection is made lazily; a
// server that is down shows as UNAVAILABLE on the first call.
func New(target string, opts ...Option) (*Client, error) {
	o := options{timeout: 5 * time.Second, retry: DefaultRetryPolicy(), sleep: sleepCtx}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if target == "" {
		return nil, errors.New("clickd: target is empty; want host:port")
	}
	dial := []grpc.DialOption{
		// gRPC's own reconnect backoff (1 s growing to 120 s) would leave
		// retries hitting a connection still backing off after the server is
		// back; follow the retry policy instead.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: o.retry.InitialBackoff, Multiplier: 1.6,
				Jitter: 0.2, MaxDelay: o.retry.MaxBackoff},
			MinConnectTimeout: 20 * time.Second,
		}),
	}
	if o.tls {
		cfg := &tls.Config{ServerName: o.serverName, MinVersion: tls.VersionTLS12}
		if o.rootPEM != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(o.rootPEM) {
				return nil, errors.New("clickd: the root certificates hold no PEM certificate")
			}
			cfg.RootCAs = pool
		}
		if o.certPEM != nil || o.keyPEM != nil {
			cert, err := tls.X509KeyPair(o.certPEM, o.keyPEM)
			if err != nil {
				return nil, fmt.Errorf("clickd: client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		if o.serverName != "" {
			return nil, errors.New("clickd: WithServerName needs TLS")
		}
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	dial = append(dial, o.dialOptions...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("clickd: %w", err)
	}
	c := &Client{conn: conn, rpc: pb.NewClickdClient(conn), opts: o,
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x636c69636b64))}
	if o.token != "" {
		c.bearer = "Bearer " + o.token
	}
	return c, nil
}

// Close closes the connection; calls under way are cancelled.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() { err = c.conn.Close() })
	return err
}

// Stub is the generated stub, for what this package does not wrap. Its
// calls get neither deadlines nor tokens from the Client.
func (c *Client) Stub() pb.ClickdClient { return c.rpc }

// CallOption changes one call.
type CallOption func(*callOptions)

type callOptions struct {
	timeout      time.Duration
	waitForReady bool
}

// Timeout overrides the client's timeout for one call.
func Timeout(d time.Duration) CallOption { return func(o *callOptions) { o.timeout = d } }

// WaitForReady makes a unary call wait for the connection instead of
// failing UNAVAILABLE while the server is unreachable (until its deadline).
func WaitForReady() CallOption { return func(o *callOptions) { o.waitForReady = true } }

func (c *Client) callOpts(opts []CallOption) callOptions {
	o := callOptions{timeout: c.opts.timeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		o.timeout = c.opts.timeout
	}
	return o
}

func (c *Client) withAuth(ctx context.Context) context.Context {
	if c.bearer == "" {
		return ctx
	}
	return withBearer(ctx, c.bearer)
}

func (c *Client) grpcOpts(o callOptions) []grpc.CallOption {
	if o.waitForReady {
		return []grpc.CallOption{grpc.WaitForReady(true)}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) jittered(attempt int) time.Duration {
	base := c.opts.retry.Backoff(attempt)
	c.mu.Lock()
	f := 1 + c.opts.retry.Jitter*(2*c.rng.Float64()-1)
	c.mu.Unlock()
	return time.Duration(float64(base) * f)
}

// unary runs one attempt with the call's deadline.
func unary[Req, Resp any](c *Client, ctx context.Context, call func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, opts []CallOption) (Resp, error) {
	o := c.callOpts(opts)
	ctx, cancel := context.WithTimeout(c.withAuth(ctx), o.timeout)
	defer cancel()
	resp, err := call(ctx, req, c.grpcOpts(o)...)
	return resp, fromRPC(err)
}

// retried runs a unary call, retrying UNAVAILABLE per the RetryPolicy.
// Without keyed one deadline covers every attempt and backoff. A keyed call
// (an Update or Feedback with an idempotency key) is also retried on
// DEADLINE_EXCEEDED, each attempt with a deadline of its own: the server may
// have applied an attempt whose deadline passed, and the key makes sending
// it again safe. The caller's ctx bounds everything in both cases.
func retried[Req, Resp any](c *Client, ctx context.Context, call func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, keyed bool, opts []CallOption) (Resp, error) {
	o := c.callOpts(opts)
	ctx = c.withAuth(ctx)
	overall, cancelAll := ctx, context.CancelFunc(func() {})
	if !keyed {
		overall, cancelAll = context.WithTimeout(ctx, o.timeout)
	}
	defer cancelAll()
	var zero Resp
	for attempt := 1; ; attempt++ {
		actx, cancel := overall, context.CancelFunc(func() {})
		if keyed {
			actx, cancel = context.WithTimeout(overall, o.timeout)
		}
		resp, err := call(actx, req, c.grpcOpts(o)...)
		cancel()
		if err == nil {
			return resp, nil
		}
		e := fromRPC(err)
		code := Code(e)
		retriable := code == codes.Unavailable || (keyed && code == codes.DeadlineExceeded)
		if !retriable || attempt >= c.opts.retry.MaxAttempts || ctx.Err() != nil {
			return zero, e
		}
		sleep := c.jittered(attempt)
		if d, ok := overall.Deadline(); ok && time.Now().Add(sleep).After(d) {
			return zero, e
		}
		if err := c.opts.sleep(overall, sleep); err != nil {
			return zero, e
		}
	}
}

// Predict scores candidates that share a context; retried on UNAVAILABLE
// unless LogImpressions is set. A Predict that logs impressions is never
// retried: an attempt whose reply was lost may have logged them, and their
// ids, lost with it, could never be labelled; a retry would log every
// candidate again under new ids.
func (c *Client) Predict(ctx context.Context, req *pb.PredictRequest, opts ...CallOption) (*pb.PredictResponse, error) {
	if req.GetLogImpressions() {
		return unary(c, ctx, c.rpc.Predict, req, opts)
	}
	return retried(c, ctx, c.rpc.Predict, req, false, opts)
}

// Update learns labeled examples, then impressions. Retried only with an
// idempotency key (then on UNAVAILABLE and DEADLINE_EXCEEDED): an Update
// whose reply was lost may have been applied, and only the key makes
// sending it again safe.
func (c *Client) Update(ctx context.Context, req *pb.UpdateRequest, opts ...CallOption) (*pb.UpdateResponse, error) {
	if req.GetIdempotencyKey() == "" {
		return unary(c, ctx, c.rpc.Update, req, opts)
	}
	return retried(c, ctx, c.rpc.Update, req, true, opts)
}

// Feedback labels impressions that a Predict with LogImpressions logged.
// Retried on UNAVAILABLE (the server joins one label per impression: an
// item a lost attempt joined comes back FEEDBACK_ALREADY_LABELLED); with an
// idempotency key also on DEADLINE_EXCEEDED, and a repeat of an applied key
// is answered Duplicate.
func (c *Client) Feedback(ctx context.Context, req *pb.FeedbackRequest, opts ...CallOption) (*pb.FeedbackResponse, error) {
	return retried(c, ctx, c.rpc.Feedback, req, req.GetIdempotencyKey() != "", opts)
}

// CreateModel creates a model and returns its ModelInfo. Never retried.
func (c *Client) CreateModel(ctx context.Context, config *pb.ModelConfig, opts ...CallOption) (*pb.ModelInfo, error) {
	resp, err := unary(c, ctx, c.rpc.CreateModel, &pb.CreateModelRequest{Config: config}, opts)
	return resp.GetModel(), err
}

// ParseModelConfig reads a ModelConfig from its protobuf JSON form,
// e.g. {"name": "ctr", "ftrl": {"alpha": 0.05}}; unknown fields are errors.
func ParseModelConfig(json string) (*pb.ModelConfig, error) {
	config := &pb.ModelConfig{}
	if err := protojson.Unmarshal([]byte(json), config); err != nil {
		return nil, fmt.Errorf("clickd: model config: %w", err)
	}
	return config, nil
}

// GetModel returns a model's ModelInfo (with stateDigest also its digest, O(model)).
func (c *Client) GetModel(ctx context.Context, name string, stateDigest bool, opts ...CallOption) (*pb.ModelInfo, error) {
	resp, err := unary(c, ctx, c.rpc.GetModel, &pb.GetModelRequest{Model: name, StateDigest: stateDigest}, opts)
	return resp.GetModel(), err
}

// StateDigest returns the model's state digest (16 hex digits); reads the whole model.
func (c *Client) StateDigest(ctx context.Context, name string, opts ...CallOption) (string, error) {
	info, err := c.GetModel(ctx, name, true, opts...)
	return info.GetStateDigest(), err
}

// ListModels returns every model's ModelInfo, ordered by name.
func (c *Client) ListModels(ctx context.Context, opts ...CallOption) ([]*pb.ModelInfo, error) {
	resp, err := unary(c, ctx, c.rpc.ListModels, &pb.ListModelsRequest{}, opts)
	return resp.GetModels(), err
}

// DeleteModel deletes a model.
func (c *Client) DeleteModel(ctx context.Context, name string, opts ...CallOption) error {
	_, err := unary(c, ctx, c.rpc.DeleteModel, &pb.DeleteModelRequest{Model: name}, opts)
	return err
}

// SnapshotModel writes a snapshot of the model now (the server needs --data_dir).
func (c *Client) SnapshotModel(ctx context.Context, name string, opts ...CallOption) (*pb.SnapshotModelResponse, error) {
	return unary(c, ctx, c.rpc.SnapshotModel, &pb.SnapshotModelRequest{Model: name}, opts)
}
