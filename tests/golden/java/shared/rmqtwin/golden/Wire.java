package rmqtwin.golden;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import org.apache.rocketmq.remoting.netty.NettyDecoder;
import org.apache.rocketmq.remoting.netty.NettyEncoder;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Frames go through the real Netty pipeline handlers, so the bytes are exactly what a Java
 * client or broker writes on (and accepts from) the socket. RemotingCommand, NettyEncoder and
 * NettyDecoder live in the same packages in 4.9.x and 5.x.
 */
final class Wire {
    private Wire() {
    }

    /** Whole frame (length word included) as NettyEncoder writes it. */
    static byte[] encode(RemotingCommand cmd) {
        EmbeddedChannel ch = new EmbeddedChannel(new NettyEncoder());
        try {
            if (!ch.writeOutbound(cmd)) {
                throw new IllegalStateException("NettyEncoder produced nothing for " + cmd);
            }
            ByteBuf out = ch.readOutbound();
            byte[] bytes = new byte[out.readableBytes()];
            out.readBytes(bytes);
            out.release();
            return bytes;
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /**
     * Decodes one whole frame (length word included) with NettyDecoder. NettyDecoder swallows
     * decode errors (it logs and closes the channel), so on failure the frame is decoded once
     * more with RemotingCommand.decode to report the real exception.
     */
    static RemotingCommand decode(byte[] frame) throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new NettyDecoder());
        Object got;
        try {
            ch.writeInbound(Unpooled.wrappedBuffer(frame));
            got = ch.readInbound();
            if (ch.readInbound() != null) {
                throw new IllegalStateException("more than one frame in vector");
            }
        } finally {
            ch.finishAndReleaseAll();
        }
        if (got instanceof RemotingCommand) {
            return (RemotingCommand) got;
        }
        if (frame.length < 4) {
            throw new IllegalStateException("frame shorter than its length word");
        }
        int length = ByteBuffer.wrap(frame).getInt();
        if (length != frame.length - 4) {
            throw new IllegalStateException("length word " + length + " but " + (frame.length - 4) + " bytes follow");
        }
        // Throws the decoder's own exception (NettyDecoder only logged it).
        RemotingCommand cmd = RemotingCommand.decode(ByteBuffer.wrap(frame, 4, frame.length - 4).slice());
        throw new IllegalStateException("NettyDecoder rejected the frame; RemotingCommand.decode gave " + cmd);
    }
}
