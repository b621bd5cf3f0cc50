package clickd

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/codes"

	pb "github.com/clickd/clickd/client/go/clickdpb"
)

// Streams are never retried; the client's timeout (or Timeout(d)) bounds
// the whole stream. A rejected message ends the stream with its error
// ("message K (N examples applied before it): ..."); the messages before it
// stay applied. After a failure, resend what was not answered (with keys,
// resending an answered request is harmless).

func (c *Client) streamCtx(ctx context.Context, opts []CallOption) (context.Context, context.CancelFunc) {
	o := c.callOpts(opts)
	return context.WithTimeout(c.withAuth(ctx), o.timeout)
}

var errFinished = &Error{Code: codes.FailedPrecondition, Message: "the stream is already finished"}

// UpdateStream sends every request on one UpdateStream and returns the
// server's summary (progressive metrics over the stream's examples).
func (c *Client) UpdateStream(ctx context.Context, reqs []*pb.UpdateRequest, opts ...CallOption) (*pb.UpdateStreamResponse, error) {
	w, err := c.OpenUpdateStream(ctx, opts...)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		if err := w.Write(r); err != nil {
			return nil, err
		}
	}
	return w.Finish()
}

// UpdateStreamWriter is an UpdateStream written message by message.
type UpdateStreamWriter struct {
	stream pb.Clickd_UpdateStreamClient
	cancel context.CancelFunc
	done   bool
}

// OpenUpdateStream opens an UpdateStream.
func (c *Client) OpenUpdateStream(ctx context.Context, opts ...CallOption) (*UpdateStreamWriter, error) {
	sctx, cancel := c.streamCtx(ctx, opts)
	s, err := c.rpc.UpdateStream(sctx)
	if err != nil {
		cancel()
		return nil, fromRPC(err)
	}
	return &UpdateStreamWriter{stream: s, cancel: cancel}, nil
}

// Write sends one request. When the server has ended the stream it returns
// the stream's error.
func (w *UpdateStreamWriter) Write(req *pb.UpdateRequest) error {
	if w.done {
		return errFinished
	}
	if err := w.stream.Send(req); err != nil {
		if errors.Is(err, io.EOF) { // the server ended the stream: its status says why
			_, err = w.Finish()
			return err
		}
		w.Cancel()
		return fromRPC(err)
	}
	return nil
}

// Finish closes the stream and returns the server's summary.
func (w *UpdateStreamWriter) Finish() (*pb.UpdateStreamResponse, error) {
	if w.done {
		return nil, errFinished
	}
	w.done = true
	defer w.cancel()
	resp, err := w.stream.CloseAndRecv()
	return resp, fromRPC(err)
}

// Cancel abandons the stream; what the server applied stays applied.
func (w *UpdateStreamWriter) Cancel() {
	w.done = true
	w.cancel()
}

// AckedUpdateStream is an UpdateStreamAcked: each Send returns its
// request's UpdateAck once the request is applied and durable.
type AckedUpdateStream struct {
	stream pb.Clickd_UpdateStreamAckedClient
	cancel context.CancelFunc
	done   bool
}

// OpenAckedUpdateStream opens an UpdateStreamAcked.
func (c *Client) OpenAckedUpdateStream(ctx context.Context, opts ...CallOption) (*AckedUpdateStream, error) {
	sctx, cancel := c.streamCtx(ctx, opts)
	s, err := c.rpc.UpdateStreamAcked(sctx)
	if err != nil {
		cancel()
		return nil, fromRPC(err)
	}
	return &AckedUpdateStream{stream: s, cancel: cancel}, nil
}

// Send sends one request and waits for its acknowledgement.
func (a *AckedUpdateStream) Send(req *pb.UpdateRequest) (*pb.UpdateAck, error) {
	if a.done {
		return nil, errFinished
	}
	if err := a.stream.Send(req); err != nil && !errors.Is(err, io.EOF) {
		a.Cancel()
		return nil, fromRPC(err)
	}
	ack, err := a.stream.Recv()
	if err != nil {
		a.Cancel()
		if errors.Is(err, io.EOF) {
			return nil, &Error{Code: codes.Internal, Message: "the server closed the stream without an answer"}
		}
		return nil, fromRPC(err)
	}
	return ack, nil
}

// Finish half-closes the stream and waits for the server to end it.
func (a *AckedUpdateStream) Finish() error {
	if a.done {
		return errFinished
	}
	a.done = true
	defer a.cancel()
	return finishBidi(a.stream.CloseSend, func() error { _, err := a.stream.Recv(); return err })
}

// Cancel abandons the stream.
func (a *AckedUpdateStream) Cancel() {
	a.done = true
	a.cancel()
}

// FeedbackStream is a FeedbackStream: each Send returns its request's
// FeedbackResponse once applied and durable.
type FeedbackStream struct {
	stream pb.Clickd_FeedbackStreamClient
	cancel context.CancelFunc
	done   bool
}

// OpenFeedbackStream opens a FeedbackStream.
func (c *Client) OpenFeedbackStream(ctx context.Context, opts ...CallOption) (*FeedbackStream, error) {
	sctx, cancel := c.streamCtx(ctx, opts)
	s, err := c.rpc.FeedbackStream(sctx)
	if err != nil {
		cancel()
		return nil, fromRPC(err)
	}
	return &FeedbackStream{stream: s, cancel: cancel}, nil
}

// Send sends one request and waits for its answer.
func (f *FeedbackStream) Send(req *pb.FeedbackRequest) (*pb.FeedbackResponse, error) {
	if f.done {
		return nil, errFinished
	}
	if err := f.stream.Send(req); err != nil && !errors.Is(err, io.EOF) {
		f.Cancel()
		return nil, fromRPC(err)
	}
	resp, err := f.stream.Recv()
	if err != nil {
		f.Cancel()
		if errors.Is(err, io.EOF) {
			return nil, &Error{Code: codes.Internal, Message: "the server closed the stream without an answer"}
		}
		return nil, fromRPC(err)
	}
	return resp, nil
}

// Finish half-closes the stream and waits for the server to end it.
func (f *FeedbackStream) Finish() error {
	if f.done {
		return errFinished
	}
	f.done = true
	defer f.cancel()
	return finishBidi(f.stream.CloseSend, func() error { _, err := f.stream.Recv(); return err })
}

// Cancel abandons the stream.
func (f *FeedbackStream) Cancel() {
	f.done = true
	f.cancel()
}

func finishBidi(closeSend func() error, recv func() error) error {
	if err := closeSend(); err != nil {
		return fromRPC(err)
	}
	err := recv()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err == nil {
		return &Error{Code: codes.Internal, Message: "the server answered after the stream was closed"}
	}
	return fromRPC(err)
}
