"""GPTModel drops out the token embeddings alone and adds the position embeddings after: in train mode
the logits still differ from eval mode's, but what drop_emb acts on is not the sum."""
MODULE = "gpt"
LOSES = ["s10.gpt.dropout"]
MENTIONS = "dropped out the token embeddings alone"
ONLY = True


class GPTModel(GPTModel):
    def forward(self, in_idx):
        positions = torch.arange(in_idx.shape[1], device=in_idx.device)
        x = self.drop_emb(self.tok_emb(in_idx)) + self.pos_emb(positions)
        return self.out_head(self.final_norm(self.trf_blocks(x)))
