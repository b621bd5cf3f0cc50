package clickd

import (
	"context"

	"google.golang.org/grpc/metadata"
)

func withBearer(ctx context.Context, bearer string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", bearer)
}
