// SPDX-License-Identifier: BSD-2-Clause
// A small Netty 4 HTTP server for connscope's tests: GET / answers "ok",
// GET /block/MS blocks the handler's thread MS milliseconds first.
// Usage: java CsNetty PORT LOOPS EXECUTORS; EXECUTORS 0 runs the handlers
// on the event loops, N > 0 on an executor group of N threads (each
// channel pinned to one of them; the loop still reads and writes).
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.CharsetUtil;
import io.netty.util.concurrent.DefaultEventExecutorGroup;
import io.netty.util.concurrent.EventExecutorGroup;

public final class CsNetty {
    static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) throws Exception {
            String uri = req.uri();
            if (uri.startsWith("/block/"))
                Thread.sleep(Long.parseLong(uri.substring(7)));
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                    Unpooled.copiedBuffer("ok\n", CharsetUtil.US_ASCII));
            res.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain");
            HttpUtil.setContentLength(res, res.content().readableBytes());
            HttpUtil.setKeepAlive(res, HttpUtil.isKeepAlive(req));
            ctx.writeAndFlush(res);
        }
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int loops = Integer.parseInt(args[1]);
        int executors = Integer.parseInt(args[2]);
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(loops);
        EventExecutorGroup pool = executors > 0 ? new DefaultEventExecutorGroup(executors) : null;
        ServerBootstrap b = new ServerBootstrap();
        b.group(boss, workers).channel(NioServerSocketChannel.class)
            .childHandler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(65536));
                    if (pool != null)
                        ch.pipeline().addLast(pool, new Handler());
                    else
                        ch.pipeline().addLast(new Handler());
                }
            });
        b.bind("127.0.0.1", port).sync();
        System.out.println("csnetty: listening on 127.0.0.1:" + port + " loops=" + loops + " executors=" + executors);
        System.out.flush();
    }
}
